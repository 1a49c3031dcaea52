// The bearer tokens of --auth_token_file: one token per line; blank lines
// and lines starting with '#' are ignored; surrounding whitespace is trimmed.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace kvserve {

/// Reads and checks the tokens. Errors (which never quote a token) name the
/// file and the line: unreadable file, no token at all, a token with
/// characters outside RFC 6750's b64token set (A-Z a-z 0-9 - . _ ~ + / then
/// trailing '='), or longer than kMaxTokenBytes.
absl::StatusOr<std::vector<std::string>> ReadTokenFile(const std::string& path);

/// The longest token accepted (a line of a token file, or a presented one).
inline constexpr size_t kMaxTokenBytes = 1024;

/// Whether `token` is a non-empty RFC 6750 b64token.
bool IsB64Token(const std::string& token);

}  // namespace kvserve
