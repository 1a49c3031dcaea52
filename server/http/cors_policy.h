// Cross-origin access to the HTTP API for browser clients (--http_cors_origins):
// which origins may call it, and the Access-Control-* headers they get.
// Off by default: no CORS headers, and browsers keep pages of other origins out.
//
// A preflight (OPTIONS with Origin and Access-Control-Request-Method) needs
// no bearer token (browsers never send one on it) and is answered the same
// for every path, so it tells an unauthenticated client nothing; the request
// that follows still needs its token. Bearer tokens travel in a header, not a
// cookie, so Access-Control-Allow-Credentials is never sent.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace kvserve::http {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

class CorsPolicy {
 public:
  /// Off.
  CorsPolicy() = default;
  /// `origins`: empty (off), `*` (any origin), or a comma-separated list of
  /// origins such as `https://app.example.com,http://localhost:3000`.
  static absl::StatusOr<CorsPolicy> Parse(absl::string_view origins);

  bool enabled() const { return any_ || !origins_.empty(); }

  /// The headers every response to a request with this Origin (empty: none)
  /// carries: Access-Control-Allow-Origin for an allowed one, Vary: Origin
  /// whenever the answer depends on the origin.
  HeaderList ResponseHeaders(absl::string_view origin) const;
  /// A preflight's headers: ResponseHeaders, plus the methods, the request
  /// headers the browser asked for (`requested_headers`, always including
  /// authorization and content-type) and how long it may cache the answer.
  HeaderList PreflightHeaders(absl::string_view origin, absl::string_view requested_headers) const;

 private:
  bool Allows(absl::string_view origin) const;

  bool any_ = false;
  std::vector<std::string> origins_;  // lower-case, as browsers serialize them
};

}  // namespace kvserve::http
