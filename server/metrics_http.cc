#include "server/metrics_http.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <list>
#include <optional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "prometheus/text_serializer.h"

namespace kvserve {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = net::ip::tcp;

namespace {

// A scrape is a GET without a body; anything larger is not one.
constexpr uint32_t kMaxHeaderBytes = 8 << 10;
constexpr uint64_t kMaxBodyBytes = 4 << 10;

}  // namespace

class MetricsConnection;

// The acceptor, the connections and the one I/O thread. Every handler runs on
// that thread, so the connection list needs no lock.
class MetricsListener {
 public:
  MetricsListener(const MetricsHttpOptions& options, prometheus::Registry& registry)
      : options_(options), registry_(registry), acceptor_(ioc_) {}

  ~MetricsListener() {
    ioc_.stop();
    if (thread_.joinable()) thread_.join();
    // ioc_'s destructor then destroys the pending handlers, and with them
    // the connections (which still find connections_: it is declared first).
  }

  absl::Status Listen() {
    boost::system::error_code ec;
    const net::ip::address address = net::ip::make_address(options_.host, ec);
    if (ec) {
      return absl::InvalidArgumentError(
          absl::StrCat("--metrics_host: not an IP address: ", options_.host));
    }
    const tcp::endpoint endpoint(address, static_cast<unsigned short>(options_.port));
    acceptor_.open(endpoint.protocol(), ec);
    if (!ec) acceptor_.set_option(net::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(endpoint, ec);
    if (!ec) acceptor_.listen(net::socket_base::max_listen_connections, ec);
    if (ec) {
      return absl::UnavailableError(absl::StrCat("--metrics_port: cannot listen on ",
                                                 options_.host, ":", options_.port, ": ",
                                                 ec.message()));
    }
    port_ = acceptor_.local_endpoint().port();
    return absl::OkStatus();
  }

  void Run() {
    Accept();
    thread_ = std::thread([this] { ioc_.run(); });
  }

  int port() const { return port_; }
  const MetricsHttpOptions& options() const { return options_; }
  prometheus::Registry& registry() { return registry_; }

  using ConnectionList = std::list<std::weak_ptr<MetricsConnection>>;
  ConnectionList::iterator Remember(std::weak_ptr<MetricsConnection> connection) {
    return connections_.insert(connections_.end(), std::move(connection));
  }
  void Forget(ConnectionList::iterator it) { connections_.erase(it); }

 private:
  void Accept();

  MetricsHttpOptions options_;
  prometheus::Registry& registry_;
  ConnectionList connections_;  // oldest first
  net::io_context ioc_{1};
  tcp::acceptor acceptor_;
  std::thread thread_;
  int port_ = 0;
};

// One client: reads requests (keep-alive) and answers each from the registry.
class MetricsConnection : public std::enable_shared_from_this<MetricsConnection> {
 public:
  MetricsConnection(tcp::socket socket, MetricsListener& listener)
      : socket_(std::move(socket)), timer_(socket_.get_executor()), listener_(listener) {}

  ~MetricsConnection() { ForgetOnce(); }

  void Start() {
    registered_ = listener_.Remember(weak_from_this());
    ReadRequest();
  }

  void CloseNow() {
    if (closed_) return;
    closed_ = true;
    ForgetOnce();  // at once: a burst of new connections evicts others, not this one again
    timer_.cancel();
    beast::error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
  }

 private:
  void ForgetOnce() {
    if (registered_) listener_.Forget(*std::exchange(registered_, std::nullopt));
  }

  // The timer bounds the whole wait, not the gap between bytes: a request
  // trickled in byte by byte still ends with the deadline.
  void ArmTimer(absl::Duration timeout) {
    timer_.expires_after(absl::ToChronoMilliseconds(timeout));
    timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (ec) return;
      // A wait that completed just before the timer was re-armed is stale.
      if (self->timer_.expiry() > std::chrono::steady_clock::now()) return;
      self->CloseNow();
    });
  }

  void ReadRequest() {
    if (closed_) return;
    parser_.emplace();
    parser_->header_limit(kMaxHeaderBytes);
    parser_->body_limit(kMaxBodyBytes);
    ArmTimer(listener_.options().idle_timeout);
    bhttp::async_read(socket_, buffer_, *parser_,
                      [self = shared_from_this()](beast::error_code ec, size_t) {
                        self->OnRequest(ec);
                      });
  }

  void OnRequest(beast::error_code ec) {
    timer_.cancel();
    if (closed_) return;
    const auto& http_errors = bhttp::make_error_code(bhttp::error::end_of_stream).category();
    if (ec && (ec.category() != http_errors || ec == bhttp::error::end_of_stream ||
               ec == bhttp::error::partial_message)) {
      CloseNow();  // the client closed its end, or the timeout closed it
      return;
    }
    auto response = std::make_shared<bhttp::response<bhttp::string_body>>();
    response->version(11);
    response->set(bhttp::field::server, "kvserve");
    if (ec) {
      response->result(ec == bhttp::error::header_limit || ec == bhttp::error::body_limit
                           ? bhttp::status::payload_too_large
                           : bhttp::status::bad_request);
      response->body() = absl::StrCat("malformed or oversized request: ", ec.message(), "\n");
      response->keep_alive(false);
    } else {
      const bhttp::request<bhttp::string_body>& request = parser_->get();
      const std::string_view target(request.target().data(), request.target().size());
      const bool is_metrics = target == "/metrics" || target.rfind("/metrics?", 0) == 0;
      if (request.method() != bhttp::verb::get) {
        response->result(bhttp::status::method_not_allowed);
        response->set(bhttp::field::allow, "GET");
        response->body() = "only GET /metrics is served here\n";
      } else if (!is_metrics) {
        response->result(bhttp::status::not_found);
        response->body() = "only GET /metrics is served here\n";
      } else {
        response->result(bhttp::status::ok);
        response->set(bhttp::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
        response->body() =
            prometheus::TextSerializer().Serialize(listener_.registry().Collect());
      }
      response->keep_alive(request.keep_alive());
    }
    if (response->result() != bhttp::status::ok) {
      response->set(bhttp::field::content_type, "text/plain; charset=utf-8");
    }
    response->prepare_payload();
    ArmTimer(listener_.options().write_timeout);
    bhttp::async_write(socket_, *response,
                       [self = shared_from_this(), response](beast::error_code ec, size_t) {
                         self->timer_.cancel();
                         if (ec || !response->keep_alive()) {
                           self->CloseNow();
                           return;
                         }
                         self->ReadRequest();
                       });
  }

  tcp::socket socket_;
  net::steady_timer timer_;
  MetricsListener& listener_;
  std::optional<MetricsListener::ConnectionList::iterator> registered_;
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  bool closed_ = false;
};

void MetricsListener::Accept() {
  acceptor_.async_accept([this](boost::system::error_code ec, tcp::socket socket) {
    if (ec) {
      if (ec == net::error::operation_aborted) return;
      KV_LOG(WARNING) << "metrics accept: " << ec.message();
    } else {
      while (static_cast<int>(connections_.size()) >= options_.max_connections) {
        if (auto oldest = connections_.front().lock()) {
          oldest->CloseNow();  // forgets itself
        } else {
          connections_.pop_front();
        }
      }
      std::make_shared<MetricsConnection>(std::move(socket), *this)->Start();
    }
    Accept();
  });
}

MetricsHttpServer::MetricsHttpServer(std::unique_ptr<MetricsListener> listener)
    : listener_(std::move(listener)) {}

absl::StatusOr<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::Start(
    const MetricsHttpOptions& options, prometheus::Registry& registry) {
  if (options.port < 0 || options.port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("--metrics_port must be in [0, 65535] (-1: off), got ", options.port));
  }
  if (options.max_connections < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics max_connections must be at least 1, got ", options.max_connections));
  }
  auto listener = std::make_unique<MetricsListener>(options, registry);
  if (absl::Status s = listener->Listen(); !s.ok()) return s;
  listener->Run();
  return std::unique_ptr<MetricsHttpServer>(new MetricsHttpServer(std::move(listener)));
}

MetricsHttpServer::~MetricsHttpServer() = default;

int MetricsHttpServer::port() const { return listener_->port(); }

}  // namespace kvserve
