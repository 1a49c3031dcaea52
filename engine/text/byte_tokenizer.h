// One token per byte, for the built-in default model: ids 0 <pad>, 1 <s>
// (BOS), 2 </s> (EOS), then byte b is id b + 3. Ids past 258 decode to nothing.
#pragma once

#include "absl/strings/string_view.h"
#include "engine/text/tokenizer.h"

namespace kvserve {

class ByteTokenizer final : public Tokenizer {
 public:
  static constexpr int32_t kPad = 0, kBos = 1, kEos = 2, kByteOffset = 3;

  explicit ByteTokenizer(int vocab_size) : vocab_size_(vocab_size) {}
  absl::StatusOr<std::vector<int32_t>> Encode(absl::string_view text,
                                              bool add_special_tokens) const override;
  std::string Decode(absl::Span<const int32_t> ids, bool skip_special_tokens) const override;
  std::string TokenBytes(int32_t id) const override { return DecodeRaw({id}, false); }
  int vocab_size() const override { return vocab_size_; }
  std::string Describe() const override { return "byte-level (one token per byte)"; }

 private:
  std::string DecodeRaw(absl::Span<const int32_t> ids, bool skip_special_tokens) const;
  int vocab_size_;
};

}  // namespace kvserve
