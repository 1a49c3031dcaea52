// Hugging Face tokenizer.json, reproducing the Python `tokenizers` library
// (checked against it by tests/tokenizer_diff_test.py). Encoding:
//   added tokens in the original text → normalizer → added tokens in the
//   normalized text → pre-tokenizer → BPE model per word → post-processor.
// Decoding: ids → token strings (added tokens first) → decoder → valid UTF-8.
// What is supported and why: docs/tokenizer.md.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/text/hf/added_vocabulary.h"
#include "engine/text/hf/bpe_model.h"
#include "engine/text/hf/decoder.h"
#include "engine/text/hf/normalizer.h"
#include "engine/text/hf/post_processor.h"
#include "engine/text/hf/pre_tokenizer.h"
#include "engine/text/tokenizer.h"

namespace kvserve {

class HfTokenizer final : public Tokenizer {
 public:
  /// Reads and parses a tokenizer.json file.
  static absl::StatusOr<std::unique_ptr<HfTokenizer>> FromFile(const std::string& path);
  /// Parses tokenizer.json text. Every malformed or unsupported part is an
  /// InvalidArgumentError naming the field.
  static absl::StatusOr<std::unique_ptr<HfTokenizer>> FromJson(absl::string_view json);

  /// Refuses text that is not valid UTF-8.
  absl::StatusOr<std::vector<int32_t>> Encode(absl::string_view text,
                                              bool add_special_tokens) const override;
  std::string Decode(absl::Span<const int32_t> ids, bool skip_special_tokens) const override;
  bool DecodeMayChange(absl::Span<const int32_t> ids, bool skip_special_tokens) const override;
  std::string TokenBytes(int32_t id) const override { return DecodeRaw({id}, false); }
  int vocab_size() const override;
  std::string Describe() const override;

  /// The string of a token id (added tokens first), or null for an unknown id.
  const std::string* IdToToken(int32_t id) const;
  /// Decode before UTF-8 validation.
  std::string DecodeRaw(absl::Span<const int32_t> ids, bool skip_special_tokens) const;

 private:
  HfTokenizer() = default;

  std::unique_ptr<hf::Normalizer> normalizer_;
  std::unique_ptr<hf::PreTokenizer> pre_tokenizer_;
  std::unique_ptr<hf::BpeModel> model_;
  std::unique_ptr<hf::AddedVocabulary> added_;
  std::unique_ptr<hf::PostProcessor> post_processor_;
  std::unique_ptr<hf::Decoder> decoder_;
  std::string description_;
};

}  // namespace kvserve
