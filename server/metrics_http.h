// Prometheus text exposition over HTTP: GET /metrics, on its own listener.
//
// Event-driven (Boost.Beast on Asio, one I/O thread): an open connection is a
// socket and a small buffer, never a thread, so idle or half-sent requests
// cannot starve a scrape (issue 13 item 3: cpp-httplib's fixed thread pool
// was blinded by 8 idle connections). Each request must arrive whole within
// the idle timeout (a slowloris trickling bytes does not extend it), and at
// most `max_connections` are held: past that, the oldest is closed.
// Separate from the OpenAI API's listener so that it can stay private
// (--metrics_host defaults to 127.0.0.1) and a busy API cannot delay it.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "prometheus/registry.h"

namespace kvserve {

struct MetricsHttpOptions {
  std::string host = "127.0.0.1";
  int port = 9464;  // 0: any free port
  /// A connection waiting for (the rest of) a request is closed after this.
  absl::Duration idle_timeout = absl::Seconds(10);
  /// A response write that does not complete in this long closes the connection.
  absl::Duration write_timeout = absl::Seconds(10);
  /// Connections held at once; a new one past this closes the oldest.
  int max_connections = 256;
};

class MetricsListener;

class MetricsHttpServer {
 public:
  /// Listens and starts the I/O thread. `registry` must outlive the server.
  static absl::StatusOr<std::unique_ptr<MetricsHttpServer>> Start(
      const MetricsHttpOptions& options, prometheus::Registry& registry);
  /// Closes every connection and stops the I/O thread.
  ~MetricsHttpServer();
  int port() const;

 private:
  explicit MetricsHttpServer(std::unique_ptr<MetricsListener> listener);
  std::unique_ptr<MetricsListener> listener_;
};

}  // namespace kvserve
