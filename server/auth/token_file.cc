#include "server/auth/token_file.h"

#include <fstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace kvserve {

bool IsB64Token(const std::string& token) {
  // b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="
  size_t i = 0;
  while (i < token.size() && (absl::ascii_isalnum(token[i]) ||
                              std::string_view("-._~+/").find(token[i]) != std::string::npos)) {
    ++i;
  }
  if (i == 0) return false;
  while (i < token.size() && token[i] == '=') ++i;
  return i == token.size();
}

absl::StatusOr<std::vector<std::string>> ReadTokenFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::InvalidArgumentError(absl::StrCat("--auth_token_file: cannot read ", path));
  std::vector<std::string> tokens;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const std::string token(absl::StripAsciiWhitespace(line));
    if (token.empty() || token[0] == '#') continue;
    // The messages name the line, never its text: a token must not reach a log.
    if (token.size() > kMaxTokenBytes) {
      return absl::InvalidArgumentError(absl::StrCat("--auth_token_file ", path, " line ", number,
                                                     ": a token is at most ", kMaxTokenBytes,
                                                     " bytes, this one has ", token.size()));
    }
    if (!IsB64Token(token)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--auth_token_file ", path, " line ", number,
          ": a token may hold only letters, digits and - . _ ~ + / (then '=' padding), with no "
          "space inside"));
    }
    tokens.push_back(token);
  }
  if (in.bad()) {
    return absl::InvalidArgumentError(absl::StrCat("--auth_token_file: error reading ", path));
  }
  if (tokens.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--auth_token_file ", path,
        " holds no token (one per line; blank lines and # comments are ignored): refusing to "
        "start with authentication that nobody could pass"));
  }
  return tokens;
}

}  // namespace kvserve
