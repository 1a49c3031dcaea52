#include "server/http/http_connection.h"

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "server/http/request_framing.h"
#include "server/request_mapping.h"

namespace kvserve::http {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;

namespace {

// Bytes a client may pipeline while its generation runs before we stop reading.
constexpr size_t kMaxPipelinedBytes = 64 << 10;

// The kernel send buffer of a connection streaming SSE. Linux grows a
// socket's buffer with its congestion window, to megabytes on loopback (its
// MSS is 64 KiB): that many tokens were taken as written while a client read
// nothing, long before --max_unsent_tokens could pause the stream. Streams
// write at token rate, so 32 KiB (the kernel doubles it) is plenty for a
// client that reads.
constexpr int kSseSendBufferBytes = 32 << 10;

constexpr char kSseHeader[] =
    "HTTP/1.1 200 OK\r\n"
    "Server: kvserve\r\n"
    "Content-Type: text/event-stream\r\n"
    "Cache-Control: no-cache\r\n";

// A lingering close reads (and drops) what the client still sends for at
// most this long, or this many bytes, before closing.
constexpr absl::Duration kLingerTime = absl::Seconds(2);
constexpr size_t kMaxLingerBytes = 1 << 20;

// A header's value when it appears exactly once, else empty.
absl::string_view SingleValue(const bhttp::request_header<>& header, bhttp::field name) {
  if (header.count(name) != 1) return {};
  const auto value = header[name];
  return absl::string_view(value.data(), value.size());
}

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
  ending_call_.reset();
  beast::error_code ignored;
  socket_.shutdown(net::ip::tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
}

void HttpConnection::ReadRequest() {
  if (closed_) return;
  cors_headers_.clear();
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
  const bhttp::request_header<>& header = parser_->get();
  version_ = header.version();
  cors_headers_ = service_.cors().ResponseHeaders(SingleValue(header, bhttp::field::origin));
  // Before a single body byte is read: the bytes after this header must
  // never be taken for a request of their own.
  if (std::optional<FramingError> error = CheckRequestFraming(header)) {
    DisarmTimer();
    keep_alive_ = false;
    Reply(LimitReply(error->status, error->message));
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
  // A CORS preflight: browsers send no credentials with it, and it is
  // answered alike for every path.
  const absl::string_view origin = SingleValue(request, bhttp::field::origin);
  if (request.method() == bhttp::verb::options && !origin.empty() &&
      request.count(bhttp::field::access_control_request_method) > 0) {
    const absl::string_view asked =
        SingleValue(request, bhttp::field::access_control_request_headers);
    HttpReply preflight{204, "", "", 0, "", service_.cors().PreflightHeaders(origin, asked)};
    cors_headers_.clear();  // the preflight's headers hold them
    Reply(preflight);
    return;
  }
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
  if (!reply.content_type.empty()) response->set(bhttp::field::content_type, reply.content_type);
  if (reply.retry_after_s > 0) {
    response->set(bhttp::field::retry_after, std::to_string(reply.retry_after_s));
  }
  if (!reply.www_authenticate.empty()) {
    response->set(bhttp::field::www_authenticate, reply.www_authenticate);
  }
  for (const auto& [name, value] : reply.headers) response->insert(name, value);
  for (const auto& [name, value] : cors_headers_) response->insert(name, value);
  response->keep_alive(keep_alive_);
  response->body() = reply.body;
  // A 204 carries no Content-Length (RFC 9110 section 8.6); Beast's would be 0.
  if (reply.status != 204) response->prepare_payload();
  ArmTimer(limits_.write_timeout);
  bhttp::async_write(socket_, *response,
                     [self = shared_from_this(), response](beast::error_code ec, size_t) {
                       self->OnReplyWritten(ec);
                     });
}

void HttpConnection::OnReplyWritten(beast::error_code ec) {
  DisarmTimer();
  ending_call_.reset();
  if (ec) {
    CloseNow();
    return;
  }
  if (!keep_alive_) {
    LingerThenClose();
    return;
  }
  NextRequest();
}

void HttpConnection::LingerThenClose() {
  if (closed_ || lingering_) return;
  lingering_ = true;
  beast::error_code ignored;
  // The client sees the end of the answer; what it had sent is never parsed.
  socket_.shutdown(net::ip::tcp::socket::shutdown_send, ignored);
  buffer_.consume(buffer_.size());
  ArmTimer(kLingerTime);
  if (watching_) return;  // the disconnect watch's read goes on as the linger's
  socket_.async_read_some(buffer_.prepare(4096),
                          [self = shared_from_this()](beast::error_code ec, size_t bytes) {
                            self->OnLinger(ec, bytes);
                          });
}

void HttpConnection::OnLinger(beast::error_code ec, size_t bytes) {
  if (closed_) return;
  lingered_bytes_ += bytes;
  if (ec || lingered_bytes_ > kMaxLingerBytes) {  // the client closed too, or sends too much
    CloseNow();
    return;
  }
  socket_.async_read_some(buffer_.prepare(4096),
                          [self = shared_from_this()](beast::error_code ec, size_t bytes) {
                            self->OnLinger(ec, bytes);
                          });
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
  access_ = std::move(generation.access);
  start_ = generation.start;
  streaming_ = generation.stream;
  stream_ended_ = false;
  last_outcome_.clear();
  if (streaming_) {
    beast::error_code ignored;  // a default-sized buffer only weakens back-pressure
    socket_.set_option(net::socket_base::send_buffer_size(kSseSendBufferBytes), ignored);
    // HTTP/1.0 has no chunked encoding (RFC 9112 section 6.1): the stream
    // ends where the connection does.
    chunked_ = version_ >= 11;
    if (!chunked_) keep_alive_ = false;
    out_pending_ = kSseHeader;
    if (chunked_) out_pending_ += "Transfer-Encoding: chunked\r\n";
    for (const auto& [name, value] : cors_headers_) {
      absl::StrAppend(&out_pending_, name, ": ", value, "\r\n");
    }
    absl::StrAppend(&out_pending_, keep_alive_ ? "" : "Connection: close\r\n", "\r\n");
    WriteOut();
  }
  WatchForDisconnect();
}

void HttpConnection::OnCallEvents() {
  if (call_ == nullptr || closed_) return;
  std::vector<ChoiceEvent> events = call_->Take();
  std::optional<HttpError> failure;
  std::string sse;
  // A client that stopped reading (paused, e.g. ended past --max_stall_s)
  // would never receive an error event: close the connection instead.
  const bool stalled = call_->paused();
  for (ChoiceEvent& event : events) {
    if (event.abort) {
      if (stalled) {
        call_->Cancel();  // the other choices end too
        service_.engine().Wake();
        EndCall(OutcomeLabel(ToHttpError(*event.abort)));
        CloseNow();
        return;
      }
      failure = ToHttpError(*event.abort);
      call_->Cancel();  // the other choices end too
      service_.engine().Wake();
      break;
    }
    if (event.output.finished()) last_outcome_ = FinishReasonLabel(event.output.finish_reason);
    if (!event.output.token_ids.empty()) {
      if (!access_.time_to_first_token) access_.time_to_first_token = absl::Now() - start_;
      access_.output_tokens += static_cast<int64_t>(event.output.token_ids.size());
    }
    builder_->Add(event.choice, event.output, sse);
    if (streaming_) {
      const int n = static_cast<int>(event.output.token_ids.size());
      out_pending_tokens_ += n;
      call_->unsent().Produced(n);
    }
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
      Reply(HttpReply{200, "application/json", DumpJson(builder_->Response()), 0, "", {}});
    }
  }
  if (streaming_) WriteOut();
}

void HttpConnection::EndCall(const std::string& outcome) {
  access_.outcome = outcome;
  access_.duration = absl::Now() - start_;
  service_.RecordEnd(access_);
  ending_call_ = std::move(call_);
}

void HttpConnection::AppendChunk(const std::string& data) {
  if (data.empty()) return;  // an empty chunk would end the response
  if (!chunked_) {
    out_pending_ += data;
    return;
  }
  char size[20];
  snprintf(size, sizeof(size), "%zx\r\n", data.size());
  absl::StrAppend(&out_pending_, size, data, "\r\n");
}

void HttpConnection::AppendLastChunk() {
  if (chunked_) out_pending_ += "0\r\n\r\n";
  stream_ended_ = true;
}

void HttpConnection::WriteOut() {
  if (writing_ || closed_) return;
  if (out_pending_.empty()) {
    if (stream_ended_) {
      streaming_ = false;
      stream_ended_ = false;
      ending_call_.reset();
      if (!keep_alive_) {
        LingerThenClose();
        return;
      }
      NextRequest();
    }
    return;
  }
  out_writing_ = std::exchange(out_pending_, {});
  out_writing_tokens_ = std::exchange(out_pending_tokens_, 0);
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
  const int written = std::exchange(out_writing_tokens_, 0);
  if (!ec && call_ != nullptr && call_->unsent().Written(written)) {
    service_.engine().Wake();  // it may be idle with only this call paused
  }
  if (ec) {  // the client is gone, or stalled past the write timeout
    CloseNow();
    return;
  }
  WriteOut();
}

void HttpConnection::WatchForDisconnect() {
  if (watching_ || closed_ || lingering_ || buffer_.size() >= kMaxPipelinedBytes) return;
  watching_ = true;
  socket_.async_read_some(buffer_.prepare(4096),
                          [self = shared_from_this()](beast::error_code ec, size_t bytes) {
                            self->OnWatch(ec, bytes);
                          });
}

void HttpConnection::OnWatch(beast::error_code ec, size_t bytes) {
  watching_ = false;
  if (lingering_) {
    OnLinger(ec, bytes);
    return;
  }
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
