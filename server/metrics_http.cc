#include "server/metrics_http.h"

#include <httplib.h>

#include "absl/strings/str_cat.h"
#include "prometheus/text_serializer.h"

namespace kvserve {

absl::StatusOr<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::Start(
    const std::string& host, int port, prometheus::Registry& registry) {
  std::unique_ptr<MetricsHttpServer> server(new MetricsHttpServer());
  server->http_ = std::make_unique<httplib::Server>();
  server->http_->Get("/metrics", [&registry](const httplib::Request&, httplib::Response& res) {
    res.set_content(prometheus::TextSerializer().Serialize(registry.Collect()),
                    "text/plain; version=0.0.4; charset=utf-8");
  });
  if (port == 0) {
    server->port_ = server->http_->bind_to_any_port(host);
  } else {
    server->port_ = server->http_->bind_to_port(host, port) ? port : -1;
  }
  if (server->port_ <= 0) {
    return absl::UnavailableError(absl::StrCat("--metrics_port: cannot listen on ", host, ":", port));
  }
  server->thread_ = std::thread([http = server->http_.get()] { http->listen_after_bind(); });
  return server;
}

MetricsHttpServer::~MetricsHttpServer() {
  if (http_) http_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace kvserve
