#include "server/metrics_http.h"

#include <httplib.h>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
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
  server->thread_ = std::thread([http = server->http_.get(), done = &server->listener_done_] {
    http->listen_after_bind();
    done->store(true);
  });
  // httplib's stop() only acts on a running server: stopped before its thread
  // got going, the thread would then block in accept() forever and the
  // destructor's join() with it. So Start returns once the listener runs.
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (!server->http_->is_running()) {
    if (absl::Now() > deadline) {
      return absl::UnavailableError("--metrics_port: the HTTP listener did not start");
    }
    absl::SleepFor(absl::Milliseconds(1));
  }
  return server;
}

MetricsHttpServer::~MetricsHttpServer() {
  if (thread_.joinable()) {
    // Repeat stop() until the listener has returned: a stop() that lands
    // before listen_after_bind() started is a no-op.
    while (!listener_done_.load()) {
      http_->stop();
      absl::SleepFor(absl::Milliseconds(1));
    }
    thread_.join();
  }
}

}  // namespace kvserve
