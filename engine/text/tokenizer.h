// Text ↔ token ids. Implementations: ByteTokenizer (the built-in model) and
// the Hugging Face tokenizer.json reader. Thread-safe for concurrent calls.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace kvserve {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  /// Encodes text; with `add_special_tokens`, applies the post-processor
  /// (e.g. prepends BOS) as Hugging Face's encode(add_special_tokens=True) does.
  virtual absl::StatusOr<std::vector<int32_t>> Encode(absl::string_view text,
                                                      bool add_special_tokens) const = 0;
  /// Decodes ids to valid UTF-8 (invalid bytes become U+FFFD).
  virtual std::string Decode(absl::Span<const int32_t> ids, bool skip_special_tokens) const = 0;
  /// Whether more ids could change the text of Decode(ids) other than by
  /// appending to it or completing a final partial character. True when
  /// `ids` end in a byte-fallback <0xXX> token: Hugging Face decodes a run of
  /// them as one unit (all of it U+FFFD if invalid). Streaming holds such
  /// text back until a later id settles it.
  virtual bool DecodeMayChange(absl::Span<const int32_t> ids, bool skip_special_tokens) const {
    return false;
  }
  /// The bytes token `id` stands for on its own, before UTF-8 validation: a
  /// token holding part of a character gives that part (the OpenAI API's
  /// logprob `bytes`, which clients join to rebuild characters).
  virtual std::string TokenBytes(int32_t id) const { return Decode({id}, false); }
  /// Ids the tokenizer knows are below this.
  virtual int vocab_size() const = 0;
  virtual std::string Describe() const = 0;
};

}  // namespace kvserve
