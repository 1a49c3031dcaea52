#include "server/http/request_framing.h"

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace kvserve::http {

namespace bhttp = boost::beast::http;

namespace {

// Every Transfer-Encoding field's codings in order, lower-cased (a list may
// be split over several fields; empty elements do not count, RFC 9110 §5.6.1).
std::vector<std::string> TransferCodings(const bhttp::request_header<>& header) {
  std::vector<std::string> codings;
  for (auto [it, end] = header.equal_range(bhttp::field::transfer_encoding); it != end; ++it) {
    const absl::string_view value(it->value().data(), it->value().size());
    for (absl::string_view coding : absl::StrSplit(value, ',')) {
      coding = absl::StripAsciiWhitespace(coding);
      if (!coding.empty()) codings.push_back(absl::AsciiStrToLower(coding));
    }
  }
  return codings;
}

}  // namespace

std::optional<FramingError> CheckRequestFraming(const bhttp::request_header<>& header) {
  const size_t hosts = header.count(bhttp::field::host);
  if (hosts > 1) {
    return FramingError{400,
                        absl::StrCat("the request has ", hosts,
                                     " Host headers; it must have one (RFC 9112 section 3.2)")};
  }
  if (hosts == 0 && header.version() >= 11) {
    return FramingError{400, "an HTTP/1.1 request must have a Host header (RFC 9112 section 3.2)"};
  }
  if (header.count(bhttp::field::transfer_encoding) == 0) return std::nullopt;
  if (header.version() < 11) {
    return FramingError{400,
                        "Transfer-Encoding in an HTTP/1.0 request: its framing cannot be trusted "
                        "(RFC 9112 section 6.1); send Content-Length"};
  }
  if (header.count(bhttp::field::content_length) > 0) {
    return FramingError{400,
                        "the request has both Transfer-Encoding and Content-Length; send one "
                        "(RFC 9112 section 6.3)"};
  }
  const std::vector<std::string> codings = TransferCodings(header);
  const std::string listed = absl::StrJoin(codings, ", ");
  if (codings.empty() || codings.back() != "chunked") {
    return FramingError{400, absl::StrCat("Transfer-Encoding \"", listed,
                                          "\": chunked must be the last transfer coding, else "
                                          "the body's length is unknown (RFC 9112 section 6.3)")};
  }
  for (size_t i = 0; i + 1 < codings.size(); ++i) {
    if (codings[i] == "chunked") {
      return FramingError{400, absl::StrCat("Transfer-Encoding \"", listed,
                                            "\": chunked may be applied only once "
                                            "(RFC 9112 section 7)")};
    }
  }
  if (codings.size() > 1) {
    return FramingError{501, absl::StrCat("Transfer-Encoding \"", listed,
                                          "\": only chunked is implemented; send the body "
                                          "uncompressed, chunked or with Content-Length")};
  }
  return std::nullopt;
}

}  // namespace kvserve::http
