// Prometheus text exposition over HTTP (cpp-httplib): GET /metrics.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "prometheus/registry.h"

namespace httplib {
class Server;
}

namespace kvserve {

class MetricsHttpServer {
 public:
  /// Listens on host:port (port 0: any free port) in a background thread.
  static absl::StatusOr<std::unique_ptr<MetricsHttpServer>> Start(const std::string& host,
                                                                  int port,
                                                                  prometheus::Registry& registry);
  ~MetricsHttpServer();
  int port() const { return port_; }

 private:
  MetricsHttpServer() = default;
  std::unique_ptr<httplib::Server> http_;
  std::thread thread_;
  std::atomic<bool> listener_done_{false};
  int port_ = 0;
};

}  // namespace kvserve
