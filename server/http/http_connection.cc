#include "server/http/http_connection.h"

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "server/request_mapping.h"

namespace kvserve::http {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;

namespace {

// Bytes a client may pipeline while its generation runs before we stop reading.
constexpr size_t kMaxPipelinedBytes = 64 << 10;

constexpr char kSseHeader[] =
    "HTTP/1.1 200 OK\r\n"
    "Server: kvserve\r\n"
    "Content-Type: text/event-stream\r\n"
    "Cache-Control: no-cache\r\n"
    "Transfer-Encoding: chunked\r\n";

HttpReply LimitReply(int status, const std::string& message) {
  HttpError error = ToHttpError(absl::InvalidArgumentError(message));
  error.http_status = status;
  error.param.clear();
  return ErrorReply(error);
}

}  // namespace

HttpConnection::HttpConnection(net::ip::tcp::socket socket, OpenAiService& service,
                               const HttpLimits& limits, std::shared_ptr<PostGate> gate,
                               std::shared_ptr<ConnectionRegistry> registry)
    : socket_(std::move(socket)),
      timer_(socket_.get_executor()),
      service_(service),
      limits_(limits),
      gate_(std::move(gate)),
      registry_(std::move(registry)) {}

HttpConnection::~HttpConnection() {
  if (call_) {  // destroyed with the io_context at shutdown, mid-generation
    call_->Cancel();
    service_.engine().Wake();
  }
  registry_->Remove(registry_id_);
}

void HttpConnection::Start() {
  registry_id_ = registry_->Add(weak_from_this());
  net::post(socket_.get_executor(), [self = shared_from_this()] { self->ReadRequest(); });
}

void HttpConnection::Close() {
  net::post(socket_.get_executor(), [self = shared_from_this()] { self->CloseNow(); });
}

void HttpConnection::PostCallEvents() {
  net::post(socket_.get_executor(), [self = shared_from_this()] { self->OnCallEvents(); });
}

void HttpConnection::ArmTimer(absl::Duration timeout) {
  timer_.expires_after(absl::ToChronoMilliseconds(timeout));
  timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
    if (ec == net::error::operation_aborted) return;
    // A wait that completed just before the timer was re-armed is stale.
    if (self->timer_.expiry() > std::chrono::steady_clock::now()) return;
    self->CloseNow();
  });
}

void HttpConnection::DisarmTimer() { timer_.cancel(); }

void HttpConnection::CloseNow() {
  if (closed_) return;
  closed_ = true;
  DisarmTimer();
  if (call_) {
    // The client is gone (or the server is stopping): free the engine's slot.
    call_->Cancel();
    service_.engine().Wake();
    EndCall("cancelled");
  }
  beast::error_code ignored;
  socket_.shutdown(net::ip::tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
}

void HttpConnection::ReadRequest() {
  if (closed_) return;
  parser_.emplace();
  parser_->header_limit(static_cast<uint32_t>(limits_.max_header_bytes));
  parser_->body_limit(limits_.max_body_bytes);
  ArmTimer(limits_.idle_timeout);
  bhttp::async_read_header(socket_, buffer_, *parser_,
                           [self = shared_from_this()](beast::error_code ec, size_t) {
                             self->OnHeader(ec);
                           });
}

void HttpConnection::OnHeader(beast::error_code ec) {
  if (ec || closed_) {
    OnRequest(ec);
    return;
  }
  auto read_body = [self = shared_from_this()](beast::error_code ec, size_t) {
    if (ec) {
      self->OnRequest(ec);
      return;
    }
    bhttp::async_read(self->socket_, self->buffer_, *self->parser_,
                      [self](beast::error_code ec, size_t) { self->OnRequest(ec); });
  };
  // curl sends "Expect: 100-continue" with bodies over 1 KiB and waits a
  // second for this before sending the body.
  if (beast::iequals(parser_->get()[bhttp::field::expect], "100-continue")) {
    static constexpr char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
    net::async_write(socket_, net::buffer(kContinue, sizeof(kContinue) - 1), read_body);
    return;
  }
  read_body(beast::error_code(), 0);
}

void HttpConnection::OnRequest(beast::error_code ec) {
  DisarmTimer();
  if (closed_) return;
  if (ec == bhttp::error::header_limit) {
    keep_alive_ = false;
    Reply(LimitReply(431, absl::StrCat("request headers exceed the limit of ",
                                       limits_.max_header_bytes,
                                       " bytes (--http_max_header_bytes)")));
    return;
  }
  if (ec == bhttp::error::body_limit) {
    keep_alive_ = false;
    Reply(LimitReply(413, absl::StrCat("request body exceeds the limit of ",
                                       limits_.max_body_bytes, " bytes (--http_max_body_bytes)")));
    return;
  }
  const auto& http_errors = bhttp::make_error_code(bhttp::error::end_of_stream).category();
  if (ec && ec.category() == http_errors &&
      ec != bhttp::error::end_of_stream && ec != bhttp::error::partial_message) {
    keep_alive_ = false;
    Reply(LimitReply(400, absl::StrCat("malformed HTTP request: ", ec.message())));
    return;
  }
  if (ec) {  // the client closed, or the idle timeout did
    CloseNow();
    return;
  }
  bhttp::request<bhttp::string_body> request = parser_->release();
  keep_alive_ = request.keep_alive();
  std::vector<std::string_view> authorization;
  for (auto [it, end] = request.equal_range(bhttp::field::authorization); it != end; ++it) {
    authorization.emplace_back(it->value().data(), it->value().size());
  }
  if (auto denied = service_.Authenticate(std::string(request.target()), authorization)) {
    Reply(*denied);
    return;
  }
  auto notify = [weak = weak_from_this(), gate = gate_] { gate->NotifyCallEvents(weak); };
  auto result = service_.Handle(std::string(request.method_string()),
                                std::string(request.target()), request.body(), notify);
  if (auto* reply = std::get_if<HttpReply>(&result)) {
    Reply(*reply);
  } else {
    BeginGeneration(std::get<StartedGeneration>(std::move(result)));
  }
}

void HttpConnection::Reply(const HttpReply& reply) {
  auto response = std::make_shared<bhttp::response<bhttp::string_body>>();
  response->version(11);
  response->result(static_cast<unsigned>(reply.status));
  response->set(bhttp::field::server, "kvserve");
  response->set(bhttp::field::content_type, reply.content_type);
  if (reply.retry_after_s > 0) {
    response->set(bhttp::field::retry_after, std::to_string(reply.retry_after_s));
  }
  if (!reply.www_authenticate.empty()) {
    response->set(bhttp::field::www_authenticate, reply.www_authenticate);
  }
  response->keep_alive(keep_alive_);
  response->body() = reply.body;
  response->prepare_payload();
  ArmTimer(limits_.write_timeout);
  bhttp::async_write(socket_, *response,
                     [self = shared_from_this(), response](beast::error_code ec, size_t) {
                       self->OnReplyWritten(ec);
                     });
}

void HttpConnection::OnReplyWritten(beast::error_code ec) {
  DisarmTimer();
  if (ec || !keep_alive_) {
    CloseNow();
    return;
  }
  NextRequest();
}

void HttpConnection::NextRequest() {
  if (closed_) return;
  if (watching_) {
    // The disconnect watch owns the read side: stop it, then read on.
    resume_after_watch_ = true;
    beast::error_code ignored;
    socket_.cancel(ignored);
    return;
  }
  ReadRequest();
}

void HttpConnection::BeginGeneration(StartedGeneration generation) {
  call_ = std::move(generation.call);
  builder_ = std::move(generation.builder);
  streaming_ = generation.stream;
  stream_ended_ = false;
  last_outcome_.clear();
  if (streaming_) {
    out_pending_ = absl::StrCat(kSseHeader, keep_alive_ ? "" : "Connection: close\r\n", "\r\n");
    WriteOut();
  }
  WatchForDisconnect();
}

void HttpConnection::OnCallEvents() {
  if (call_ == nullptr || closed_) return;
  std::vector<ChoiceEvent> events = call_->Take();
  std::optional<HttpError> failure;
  std::string sse;
  for (ChoiceEvent& event : events) {
    if (event.abort) {
      failure = ToHttpError(*event.abort);
      call_->Cancel();  // the other choices end too
      service_.engine().Wake();
      break;
    }
    if (event.output.finished()) last_outcome_ = FinishReasonLabel(event.output.finish_reason);
    builder_->Add(event.choice, event.output, sse);
  }
  if (failure) {
    EndCall(OutcomeLabel(*failure));
    if (streaming_) {
      AppendChunk(SseEvent(ErrorBody(*failure)) + "data: [DONE]\n\n");
      AppendLastChunk();
      WriteOut();
    } else {
      Reply(ErrorReply(*failure));
    }
    return;
  }
  if (streaming_) AppendChunk(sse);
  if (builder_->all_finished()) {
    EndCall(last_outcome_);
    if (streaming_) {
      AppendChunk(builder_->End());
      AppendLastChunk();
    } else {
      Reply(HttpReply{200, "application/json", DumpJson(builder_->Response()), 0, ""});
    }
  }
  if (streaming_) WriteOut();
}

void HttpConnection::EndCall(const std::string& outcome) {
  service_.RecordOutcome(outcome);
  call_.reset();
}

void HttpConnection::AppendChunk(const std::string& data) {
  if (data.empty()) return;  // an empty chunk would end the response
  char size[20];
  snprintf(size, sizeof(size), "%zx\r\n", data.size());
  absl::StrAppend(&out_pending_, size, data, "\r\n");
}

void HttpConnection::AppendLastChunk() {
  out_pending_ += "0\r\n\r\n";
  stream_ended_ = true;
}

void HttpConnection::WriteOut() {
  if (writing_ || closed_) return;
  if (out_pending_.empty()) {
    if (stream_ended_) {
      streaming_ = false;
      stream_ended_ = false;
      if (!keep_alive_) {
        CloseNow();
        return;
      }
      NextRequest();
    }
    return;
  }
  out_writing_ = std::exchange(out_pending_, {});
  writing_ = true;
  ArmTimer(limits_.write_timeout);
  net::async_write(socket_, net::buffer(out_writing_),
                   [self = shared_from_this()](beast::error_code ec, size_t) {
                     self->OnOutWritten(ec);
                   });
}

void HttpConnection::OnOutWritten(beast::error_code ec) {
  writing_ = false;
  DisarmTimer();
  if (ec) {  // the client is gone, or stalled past the write timeout
    CloseNow();
    return;
  }
  WriteOut();
}

void HttpConnection::WatchForDisconnect() {
  if (watching_ || closed_ || buffer_.size() >= kMaxPipelinedBytes) return;
  watching_ = true;
  socket_.async_read_some(buffer_.prepare(4096),
                          [self = shared_from_this()](beast::error_code ec, size_t bytes) {
                            self->OnWatch(ec, bytes);
                          });
}

void HttpConnection::OnWatch(beast::error_code ec, size_t bytes) {
  watching_ = false;
  if (!ec) buffer_.commit(bytes);  // a pipelined request: kept for the next read
  if (resume_after_watch_) {
    resume_after_watch_ = false;
    ReadRequest();
    return;
  }
  if (ec) {
    CloseNow();  // the client closed its end mid-generation: cancel
    return;
  }
  if (call_ != nullptr) WatchForDisconnect();
}

}  // namespace kvserve::http
