#include "server/http/cors_policy.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace kvserve::http {
namespace {

// Browsers cap it (Chromium at 2 hours); a restart with other origins is
// seen by a browser within this.
constexpr char kPreflightMaxAgeS[] = "3600";
constexpr char kMethods[] = "GET, POST, OPTIONS";
constexpr char kAlwaysAllowedHeaders[] = "authorization, content-type";

// RFC 9110 token characters.
bool IsTokenChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) ||
         absl::string_view("!#$%&'*+-.^_`|~").find(c) != absl::string_view::npos;
}

// scheme "://" host [":" port], nothing after: what a browser sends as Origin.
absl::Status CheckOrigin(absl::string_view origin) {
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("--http_cors_origins: \"", origin, "\" is not an origin (", why,
                     "); give scheme://host[:port] like https://app.example.com, or * alone"));
  };
  absl::string_view rest = origin;
  if (absl::ConsumePrefix(&rest, "https://") || absl::ConsumePrefix(&rest, "http://")) {
    if (rest.empty()) return bad("no host");
    for (char c : rest) {
      if (!IsTokenChar(c) && c != ':' && c != '[' && c != ']') {
        return bad(absl::StrCat("'", std::string(1, c), "' has no place in an origin"));
      }
    }
    if (rest.find('*') != absl::string_view::npos) return bad("wildcards are * alone");
    return absl::OkStatus();
  }
  return bad("it must start with http:// or https://");
}

}  // namespace

absl::StatusOr<CorsPolicy> CorsPolicy::Parse(absl::string_view origins) {
  CorsPolicy policy;
  for (absl::string_view origin : absl::StrSplit(origins, ',')) {
    origin = absl::StripAsciiWhitespace(origin);
    if (origin.empty()) continue;
    if (origin == "*") {
      policy.any_ = true;
      continue;
    }
    if (absl::Status s = CheckOrigin(origin); !s.ok()) return s;
    policy.origins_.push_back(absl::AsciiStrToLower(origin));
  }
  if (policy.any_ && !policy.origins_.empty()) {
    return absl::InvalidArgumentError(
        "--http_cors_origins: * already allows every origin; give * alone or a list of origins");
  }
  return policy;
}

bool CorsPolicy::Allows(absl::string_view origin) const {
  if (origin.empty()) return false;
  if (any_) return true;
  return std::any_of(origins_.begin(), origins_.end(), [&](const std::string& allowed) {
    return absl::EqualsIgnoreCase(allowed, origin);
  });
}

HeaderList CorsPolicy::ResponseHeaders(absl::string_view origin) const {
  HeaderList headers;
  if (!enabled()) return headers;
  if (any_) {
    if (!origin.empty()) headers.emplace_back("Access-Control-Allow-Origin", "*");
    return headers;
  }
  // A cache must not hand one origin's answer to another.
  headers.emplace_back("Vary", "Origin");
  if (Allows(origin)) headers.emplace_back("Access-Control-Allow-Origin", std::string(origin));
  return headers;
}

HeaderList CorsPolicy::PreflightHeaders(absl::string_view origin,
                                        absl::string_view requested_headers) const {
  HeaderList headers = ResponseHeaders(origin);
  if (!Allows(origin)) return headers;
  std::string allowed = kAlwaysAllowedHeaders;
  // The OpenAI JavaScript client sends x-stainless-* headers besides these:
  // a well-formed list is allowed as asked (as vLLM's default does).
  const bool well_formed =
      std::all_of(requested_headers.begin(), requested_headers.end(),
                  [](char c) { return IsTokenChar(c) || c == ',' || c == ' '; });
  if (well_formed && !absl::StripAsciiWhitespace(requested_headers).empty()) {
    absl::StrAppend(&allowed, ", ", absl::AsciiStrToLower(requested_headers));
  }
  headers.emplace_back("Access-Control-Allow-Methods", kMethods);
  headers.emplace_back("Access-Control-Allow-Headers", std::move(allowed));
  headers.emplace_back("Access-Control-Max-Age", kPreflightMaxAgeS);
  return headers;
}

}  // namespace kvserve::http
