// The event-driven HTTP/1.1 server of the OpenAI-compatible API: Boost.Beast
// on Asio, a fixed pool of I/O threads, each connection on its own strand
// (docs/architecture.md, "HTTP server"). Connections never block a thread:
// 2,000 open streams cost 2,000 sockets and their buffers, not 2,000 threads.
#pragma once

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "engine/core/engine.h"
#include "server/auth/bearer_tokens.h"
#include "server/chat_mapping.h"
#include "server/http/http_limits.h"
#include "server/server_metrics.h"

namespace kvserve::http {

struct HttpServerOptions {
  std::string host = "0.0.0.0";
  int port = 8000;  // 0: any free port
  int io_threads = 2;
  std::string served_model_name;  // empty: the model's name
  HttpLimits limits;
  ChatAccess chat;
  /// Bearer tokens every request but GET /health must carry; null: none needed.
  std::shared_ptr<const BearerTokens> auth;
  /// Browser origins allowed to call the API (CorsPolicy::Parse): empty none, `*` any,
  /// or a comma-separated list.
  std::string cors_origins;
};

class HttpServerImpl;

class HttpServer {
 public:
  /// Listens and starts the I/O threads. `engine` and `metrics` must outlive the server.
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(const HttpServerOptions& options,
                                                           Engine& engine,
                                                           ServerMetrics& metrics);
  ~HttpServer();

  int port() const;
  /// /health and new generations answer 503 from now on; streams go on.
  void BeginDrain();
  /// Drains and waits until no generation is running or `deadline` passes;
  /// true when none is left. A generation counts until its reply's last byte
  /// is written. Connections stay open.
  bool WaitForNoCalls(absl::Time deadline);
  /// Drains, waits until `deadline` for running generations, then closes
  /// every connection (their requests are cancelled and their KV blocks
  /// freed at the engine's next step) and stops the I/O threads. Idempotent.
  void Shutdown(absl::Time deadline);

 private:
  explicit HttpServer(std::unique_ptr<HttpServerImpl> impl);
  std::unique_ptr<HttpServerImpl> impl_;
};

}  // namespace kvserve::http
