// One client connection: reads HTTP/1.1 requests (keep-alive, pipelined
// requests wait their turn), hands them to the OpenAiService and writes the
// reply, or, for a generation, the engine's outputs as they arrive: one JSON
// reply, or a server-sent-event stream in chunked encoding (HTTP/1.0:
// delimited by closing the connection).
//
// A request whose framing is unsafe (request_framing.h) is answered before
// its body is read, and the connection closed: nothing after its header is
// ever parsed. Closing after an answer is a lingering close (the write side
// first, then what the client still sends is read and discarded for a
// moment), so that unread bytes do not turn the close into a reset that
// could destroy the answer before the client reads it.
//
// Everything runs on the connection's strand. The engine's output thread
// only queues into the GenerationCall and posts one drain to the strand.
// While a generation runs, a read stays pending on the socket: the client
// closing its end cancels the request, so its KV blocks are freed at the
// engine's next step, not when the next token fails to write.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <memory>
#include <optional>
#include <string>

#include "server/http/connection_registry.h"
#include "server/http/http_limits.h"
#include "server/http/openai_service.h"

namespace kvserve::http {

class HttpConnection : public std::enable_shared_from_this<HttpConnection> {
 public:
  /// `socket`'s executor must be a strand.
  HttpConnection(boost::asio::ip::tcp::socket socket, OpenAiService& service,
                 const HttpLimits& limits, std::shared_ptr<PostGate> gate,
                 std::shared_ptr<ConnectionRegistry> registry);
  ~HttpConnection();

  void Start();
  /// Any thread: closes the connection on its strand, cancelling its request.
  void Close();
  /// Any thread: drains the generation's queued events on the strand.
  void PostCallEvents();

 private:
  void ReadRequest();
  void OnHeader(boost::beast::error_code ec);
  void OnRequest(boost::beast::error_code ec);
  void Reply(const HttpReply& reply);
  void OnReplyWritten(boost::beast::error_code ec);
  void NextRequest();
  void LingerThenClose();
  void OnLinger(boost::beast::error_code ec, size_t bytes);

  void BeginGeneration(StartedGeneration generation);
  void OnCallEvents();
  void EndCall(const std::string& outcome);
  void AppendChunk(const std::string& data);
  void AppendLastChunk();
  void WriteOut();
  void OnOutWritten(boost::beast::error_code ec);
  void WatchForDisconnect();
  void OnWatch(boost::beast::error_code ec, size_t bytes);

  void ArmTimer(absl::Duration timeout);
  void DisarmTimer();
  void CloseNow();

  boost::asio::ip::tcp::socket socket_;
  boost::asio::steady_timer timer_;
  OpenAiService& service_;
  const HttpLimits& limits_;
  std::shared_ptr<PostGate> gate_;
  std::shared_ptr<ConnectionRegistry> registry_;
  uint64_t registry_id_ = 0;

  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  bool keep_alive_ = false;
  bool closed_ = false;
  unsigned version_ = 11;    // the request's HTTP version: 10 or 11
  HeaderList cors_headers_;  // for every response to the current request
  bool lingering_ = false;   // closing: the write side is shut, reads are dropped
  size_t lingered_bytes_ = 0;

  // The generation in progress.
  std::shared_ptr<GenerationCall> call_;  // null when none, or once it has ended
  // The ended call, held until its reply's last byte is written (or the
  // connection closes): shutdown waits for the calls held, so that a
  // stream's final error event reaches the client before its connection closes.
  std::shared_ptr<GenerationCall> ending_call_;
  AccessRecord access_;  // the generation's access-log line so far
  absl::Time start_;
  std::unique_ptr<OpenAiResponseBuilder> builder_;
  bool streaming_ = false;     // an SSE response is being written
  bool chunked_ = false;       // ... in chunked encoding (HTTP/1.1)
  bool stream_ended_ = false;  // its last chunk is queued
  std::string last_outcome_;   // the finish reason of the last choice to end
  std::string out_pending_;    // SSE bytes not yet written
  std::string out_writing_;    // owned by the write in flight
  int out_pending_tokens_ = 0;  // tokens in out_pending_ (call_->unsent() counts them)
  int out_writing_tokens_ = 0;  // tokens in out_writing_
  bool writing_ = false;
  bool watching_ = false;      // the disconnect watch's read is pending
  bool resume_after_watch_ = false;
};

}  // namespace kvserve::http
