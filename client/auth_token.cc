#include "client/auth_token.h"

#include <cstdlib>
#include <fstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace kvserve {

absl::StatusOr<std::string> ResolveAuthToken(const std::string& token_file,
                                             const std::string& token) {
  if (!token_file.empty() && !token.empty()) {
    return absl::InvalidArgumentError("give one of --auth_token_file and --auth_token");
  }
  if (!token_file.empty()) {
    std::ifstream in(token_file);
    if (!in) return absl::InvalidArgumentError(absl::StrCat("--auth_token_file: cannot read ", token_file));
    std::string line;
    while (std::getline(in, line)) {
      const std::string trimmed(absl::StripAsciiWhitespace(line));
      if (!trimmed.empty() && trimmed[0] != '#') return trimmed;
    }
    return absl::InvalidArgumentError(absl::StrCat("--auth_token_file: no token in ", token_file));
  }
  if (!token.empty()) return std::string(absl::StripAsciiWhitespace(token));
  const char* env = std::getenv("KVSERVE_AUTH_TOKEN");
  return env == nullptr ? std::string() : std::string(absl::StripAsciiWhitespace(env));
}

}  // namespace kvserve
