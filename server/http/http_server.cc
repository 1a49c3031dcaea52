#include "server/http/http_server.h"

#include <sys/resource.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/strand.hpp>
#include <optional>

#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "server/http/connection_registry.h"
#include "server/http/http_connection.h"
#include "server/http/openai_service.h"

namespace kvserve::http {

namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

// Thousands of open streams need thousands of descriptors; the soft limit is
// often 1024 while the hard one allows far more.
void RaiseOpenFileLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
}

std::chrono::steady_clock::time_point ToSteady(absl::Time deadline) {
  return std::chrono::steady_clock::now() +
         absl::ToChronoMilliseconds(std::max(absl::ZeroDuration(), deadline - absl::Now()));
}

}  // namespace

class HttpServerImpl {
 public:
  HttpServerImpl(const HttpServerOptions& options, Engine& engine, ServerMetrics& metrics)
      : limits_(options.limits),
        tracker_(std::make_shared<CallTracker>()),
        service_(engine, options.chat, metrics,
                 options.served_model_name.empty() ? engine.info().model_name
                                                   : options.served_model_name,
                 tracker_),
        ioc_(options.io_threads),
        acceptor_(net::make_strand(ioc_)) {
    if (options.auth) service_.RequireBearerTokens(options.auth);
  }

  absl::Status Listen(const std::string& host, int port) {
    boost::system::error_code ec;
    const net::ip::address address = net::ip::make_address(host, ec);
    if (ec) return absl::InvalidArgumentError(absl::StrCat("--http_host: bad address ", host));
    const tcp::endpoint endpoint(address, static_cast<unsigned short>(port));
    acceptor_.open(endpoint.protocol(), ec);
    if (!ec) acceptor_.set_option(net::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(endpoint, ec);
    if (!ec) acceptor_.listen(net::socket_base::max_listen_connections, ec);
    if (ec) {
      return absl::UnavailableError(
          absl::StrCat("cannot listen on ", host, ":", port, " for HTTP: ", ec.message()));
    }
    port_ = acceptor_.local_endpoint().port();
    return absl::OkStatus();
  }

  void Run(int io_threads) {
    work_.emplace(net::make_work_guard(ioc_));
    Accept();
    for (int i = 0; i < io_threads; ++i) threads_.emplace_back([this] { ioc_.run(); });
  }

  bool WaitForNoCalls(absl::Time deadline) {
    service_.BeginDrain();
    return tracker_->WaitForNone(ToSteady(deadline));
  }

  void Shutdown(absl::Time deadline) {
    if (shut_down_) return;
    shut_down_ = true;
    service_.BeginDrain();
    tracker_->WaitForNone(ToSteady(deadline));
    net::post(acceptor_.get_executor(), [this] {
      boost::system::error_code ignored;
      acceptor_.close(ignored);
    });
    // Closing cancels what is left; the engine ends those at its next step.
    registry_->CloseAll();
    if (!tracker_->WaitForNone(std::chrono::steady_clock::now() + std::chrono::seconds(10))) {
      KV_LOG(WARNING) << "HTTP shutdown: " << tracker_->count()
                      << " generations still held by the engine";
    }
    gate_->Close();
    work_.reset();
    ioc_.stop();
    for (std::thread& t : threads_) t.join();
    threads_.clear();
  }

  void BeginDrain() { service_.BeginDrain(); }
  void SetCorsPolicy(CorsPolicy cors) { service_.SetCorsPolicy(std::move(cors)); }
  int port() const { return port_; }

 private:
  void Accept() {
    acceptor_.async_accept(net::make_strand(ioc_), [this](boost::system::error_code ec,
                                                          tcp::socket socket) {
      if (!acceptor_.is_open()) return;
      if (!ec) {
        boost::system::error_code ignored;
        socket.set_option(tcp::no_delay(true), ignored);  // SSE events go out at once
        std::make_shared<HttpConnection>(std::move(socket), service_, limits_, gate_, registry_)
            ->Start();
      } else {
        KV_LOG(WARNING) << "HTTP accept: " << ec.message();
      }
      Accept();
    });
  }

  HttpLimits limits_;
  std::shared_ptr<CallTracker> tracker_;
  std::shared_ptr<PostGate> gate_ = std::make_shared<PostGate>();
  std::shared_ptr<ConnectionRegistry> registry_ = std::make_shared<ConnectionRegistry>();
  OpenAiService service_;  // outlives ioc_: connections destroyed with it use the service
  net::io_context ioc_;
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work_;
  tcp::acceptor acceptor_;
  std::vector<std::thread> threads_;
  int port_ = 0;
  bool shut_down_ = false;
};

HttpServer::HttpServer(std::unique_ptr<HttpServerImpl> impl) : impl_(std::move(impl)) {}

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(const HttpServerOptions& options,
                                                              Engine& engine,
                                                              ServerMetrics& metrics) {
  if (options.port < 0 || options.port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("--http_port must be in [0, 65535] (-1: off), got ", options.port));
  }
  if (options.io_threads < 1 || options.io_threads > 64) {
    return absl::InvalidArgumentError(
        absl::StrCat("--http_io_threads must be in [1, 64], got ", options.io_threads));
  }
  if (absl::Status s = options.limits.Validate(); !s.ok()) return s;
  absl::StatusOr<CorsPolicy> cors = CorsPolicy::Parse(options.cors_origins);
  if (!cors.ok()) return cors.status();
  RaiseOpenFileLimit();
  auto impl = std::make_unique<HttpServerImpl>(options, engine, metrics);
  impl->SetCorsPolicy(*std::move(cors));
  if (absl::Status s = impl->Listen(options.host, options.port); !s.ok()) return s;
  impl->Run(options.io_threads);
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

HttpServer::~HttpServer() { impl_->Shutdown(absl::Now()); }

int HttpServer::port() const { return impl_->port(); }
void HttpServer::BeginDrain() { impl_->BeginDrain(); }
bool HttpServer::WaitForNoCalls(absl::Time deadline) { return impl_->WaitForNoCalls(deadline); }
void HttpServer::Shutdown(absl::Time deadline) { impl_->Shutdown(deadline); }

}  // namespace kvserve::http
