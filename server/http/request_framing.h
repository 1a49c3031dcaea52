// RFC 9112's framing rules for a request, checked on its parsed header before
// a single body byte is read. Beast reads a request whose Transfer-Encoding
// does not end in `chunked` (`gzip`, `identity`, `chunked, gzip`) as having
// no body, so on a kept-alive connection its body bytes would be parsed as
// the next request: request smuggling. Every such request is refused here,
// and the connection closed after the answer.
//
//   Host            exactly one in HTTP/1.1, at most one in HTTP/1.0 (§3.2)
//   Transfer-Encoding
//                   HTTP/1.1 only (§6.1); never with Content-Length (§6.3);
//                   `chunked` last (400) and alone: other codings are not
//                   implemented (501)
#pragma once

#include <boost/beast/http/message.hpp>
#include <optional>
#include <string>

namespace kvserve::http {

struct FramingError {
  int status = 400;  // 400, or 501 for a transfer coding kvserve does not implement
  std::string message;
};

/// nullopt when the body can be read safely.
std::optional<FramingError> CheckRequestFraming(const boost::beast::http::request_header<>& header);

}  // namespace kvserve::http
