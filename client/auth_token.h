// The bearer token of kvserve-cli and kvserve-bench: --auth_token_file (the
// first token in it: the server's token file format, one per line, #
// comments), else --auth_token, else $KVSERVE_AUTH_TOKEN. A file or the
// environment keeps the token out of `ps` and shell history.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace kvserve {

/// Empty when none of the three is set. Errors name the flag.
absl::StatusOr<std::string> ResolveAuthToken(const std::string& token_file,
                                             const std::string& token);

}  // namespace kvserve
