// The gRPC server around an Engine: kvserve.v1.Inference, grpc.health.v1.Health,
// server reflection, and the Prometheus endpoint.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "engine/core/engine.h"
#include "server/auth/authenticating_service.h"
#include "server/auth/bearer_tokens.h"
#include "server/chat_mapping.h"
#include "server/grpc_limits.h"
#include "server/inference_service.h"
#include "server/memory_trimmer.h"
#include "server/metrics_http.h"
#include "server/server_metrics.h"

namespace kvserve {

struct ServerOptions {
  std::string host = "0.0.0.0";
  int port = 50051;          // 0: any free port
  int metrics_port = 9464;   // 0: any free port; -1: no metrics endpoint
  std::string metrics_host = "127.0.0.1";  // private by default (--metrics_host)
  /// On shutdown, in-flight requests get this long to finish before they are cancelled.
  absl::Duration shutdown_grace = absl::Seconds(5);
  std::string tls_cert_file;  // PEM; with tls_key_file, serve TLS instead of plaintext
  std::string tls_key_file;
  /// PEM CA certificates: with TLS, every client must present a certificate
  /// they signed (--tls_client_ca; docs/security.md).
  std::string tls_client_ca_file;
  /// Bearer tokens every kvserve.v1 call must carry (--auth_token_file);
  /// null: no authentication. Health and reflection stay open.
  std::shared_ptr<const BearerTokens> auth;
  /// Streams, memory, keepalive and connection lifetimes (the --grpc_* flags).
  GrpcLimits grpc_limits;
  /// Log each generation request's prompt (--log_prompts); never otherwise.
  bool log_prompts = false;
  /// The chat template's formatter (owned by the caller, outliving the
  /// server), or why chat is unavailable.
  ChatAccess chat;
};

class KvServer {
 public:
  static absl::StatusOr<std::unique_ptr<KvServer>> Start(const ServerOptions& options,
                                                         Engine& engine,
                                                         prometheus::Registry& registry);
  ~KvServer();

  int port() const { return port_; }
  int metrics_port() const { return metrics_ ? metrics_->port() : -1; }
  /// kvserve_requests_total, shared with the HTTP API.
  ServerMetrics& metrics() { return metrics_registry_; }
  /// Health turns NOT_SERVING and new generation calls are refused with
  /// UNAVAILABLE; the server keeps answering (health probes included) and
  /// the calls in flight go on. Lets the HTTP API drain first while the
  /// probe still says NOT_SERVING rather than failing to connect.
  void BeginDrain();
  /// Refuses new generation calls and waits until none is in flight or
  /// `deadline` passes; true when none is left. The server goes on serving.
  bool WaitForNoCalls(absl::Time deadline);
  /// Stops accepting calls, lets in-flight ones finish until `deadline`
  /// (default: the grace period from now), cancels the rest, and waits for
  /// all of them. Idempotent.
  void Shutdown();
  void Shutdown(absl::Time deadline);

 private:
  KvServer(Engine& engine, prometheus::Registry& registry, ChatAccess chat, bool log_prompts);

  ServerOptions options_;
  ServerMetrics metrics_registry_;
  InferenceService service_;
  std::unique_ptr<AuthenticatingService> auth_service_;  // wraps service_ when options.auth
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<MetricsHttpServer> metrics_;
  std::unique_ptr<MemoryTrimmer> trimmer_;  // when --malloc_trim_interval_s > 0
  int port_ = 0;
  bool shut_down_ = false;
};

}  // namespace kvserve
