#include "server/auth/bearer_tokens.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "absl/strings/ascii.h"
#include "base/logging.h"
#include "server/auth/token_file.h"

namespace kvserve {

BearerTokens::BearerTokens(const std::vector<std::string>& tokens) {
  KV_CHECK(!tokens.empty()) << "BearerTokens needs at least one token";
  for (const std::string& token : tokens) digests_.push_back(Sha256(token));
}

BearerTokens::Digest BearerTokens::Sha256(std::string_view text) {
  Digest digest;
  unsigned int size = 0;
  KV_CHECK(EVP_Digest(text.data(), text.size(), digest.data(), &size, EVP_sha256(), nullptr) == 1 &&
           size == digest.size())
      << "SHA-256 failed";
  return digest;
}

std::optional<std::string_view> ParseBearer(std::string_view authorization) {
  constexpr std::string_view kScheme = "bearer";
  if (authorization.size() <= kScheme.size() || authorization[kScheme.size()] != ' ') {
    return std::nullopt;
  }
  for (size_t i = 0; i < kScheme.size(); ++i) {
    if (absl::ascii_tolower(static_cast<unsigned char>(authorization[i])) != kScheme[i]) {
      return std::nullopt;
    }
  }
  std::string_view token = authorization.substr(kScheme.size());
  while (!token.empty() && absl::ascii_isspace(static_cast<unsigned char>(token.front()))) {
    token.remove_prefix(1);
  }
  while (!token.empty() && absl::ascii_isspace(static_cast<unsigned char>(token.back()))) {
    token.remove_suffix(1);
  }
  if (token.empty()) return std::nullopt;
  return token;
}

AuthResult BearerTokens::Check(std::optional<std::string_view> authorization) const {
  if (!authorization) return AuthResult::kMissing;
  std::optional<std::string_view> token = ParseBearer(*authorization);
  if (!token) return AuthResult::kMalformed;
  // Longer than any token a file may hold: cannot match; also bounds the hashing.
  if (token->size() > kMaxTokenBytes) return AuthResult::kRejected;
  const Digest presented = Sha256(*token);
  int matched = 0;
  for (const Digest& digest : digests_) {
    matched |= CRYPTO_memcmp(presented.data(), digest.data(), digest.size()) == 0;
  }
  return matched ? AuthResult::kAccepted : AuthResult::kRejected;
}

std::string AuthFailureMessage(AuthResult result) {
  switch (result) {
    case AuthResult::kAccepted: return "";
    case AuthResult::kMissing:
      return "this server requires a bearer token: send the header 'authorization: Bearer "
             "<token>'";
    case AuthResult::kMalformed:
      return "the authorization header must be exactly one 'Bearer <token>'";
    case AuthResult::kRejected: return "incorrect bearer token";
  }
  return "";
}

}  // namespace kvserve
