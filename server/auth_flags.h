// Flags of client authentication: bearer tokens (both APIs) and TLS client
// certificates (gRPC). docs/security.md.
#pragma once

#include <memory>
#include <string>

#include "absl/flags/declare.h"
#include "absl/status/statusor.h"
#include "server/auth/bearer_tokens.h"

ABSL_DECLARE_FLAG(std::string, auth_token_file);
ABSL_DECLARE_FLAG(std::string, tls_client_ca);

namespace kvserve {

/// The tokens of --auth_token_file; null when the flag is empty (no
/// authentication). Logs how many tokens were loaded (never the tokens), and
/// warns when the file is readable by every user.
absl::StatusOr<std::shared_ptr<const BearerTokens>> BearerTokensFromFlags();

}  // namespace kvserve
