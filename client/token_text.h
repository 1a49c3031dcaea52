// The text of single tokens, for kvserve-cli's tokenize and logprobs
// output. The API carries ids only (TokenizeResponse, TokenLogprobs), so
// each distinct id is decoded once through Detokenize, special tokens kept.
// A token holding part of a UTF-8 character decodes to U+FFFD.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "client/client.h"

namespace kvserve {

class TokenTexts {
 public:
  TokenTexts(Client &client, CallOptions options) : client_(client), options_(options) {}

  /// The token's text; nullopt when the server cannot say (no tokenizer, or
  /// the call failed: then no further call is made).
  std::optional<std::string> Get(int32_t id);

 private:
  Client &client_;
  CallOptions options_;
  bool unavailable_ = false;
  std::map<int32_t, std::string> cache_;
};

/// `text` in double quotes with \n \t \r \\ \" and other control characters
/// (\xNN) escaped, so that a token's spaces and newlines show; UTF-8 stays.
std::string QuotedToken(const std::string &text);

}  // namespace kvserve
