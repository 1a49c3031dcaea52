// Checks an `authorization: Bearer <token>` value (gRPC metadata or HTTP
// header) against the configured tokens in constant time: each token is
// kept only as its SHA-256 digest, the presented token is hashed, and its
// digest is compared with every configured one by CRYPTO_memcmp, all of them,
// with no early exit. Digests have a fixed size, so neither which token
// matched nor the configured tokens' lengths show in the timing.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kvserve {

enum class AuthResult {
  kAccepted,
  kMissing,    // no authorization header / metadata
  kMalformed,  // not "Bearer <token>", or more than one authorization value
  kRejected,   // a well-formed bearer token that is not configured
};

class BearerTokens {
 public:
  /// `tokens`: at least one (ReadTokenFile's output).
  explicit BearerTokens(const std::vector<std::string>& tokens);

  /// `authorization`: the header's value; nullopt when absent.
  AuthResult Check(std::optional<std::string_view> authorization) const;

  size_t size() const { return digests_.size(); }

 private:
  using Digest = std::array<unsigned char, 32>;
  static Digest Sha256(std::string_view text);

  std::vector<Digest> digests_;
};

/// The token of "Bearer <token>" (scheme case-insensitive, spaces around the
/// token allowed); nullopt when the value is not of that form.
std::optional<std::string_view> ParseBearer(std::string_view authorization);

/// What the client is told, for UNAUTHENTICATED and 401 alike. Never quotes
/// the token.
std::string AuthFailureMessage(AuthResult result);

}  // namespace kvserve
