// Writes a valid Hugging Face tokenizer.json for a generated checkpoint
// (kvserve-mkmodel), in the shapes real checkpoints use. Its merges are
// learned from a small built-in corpus and then filled with random merges up
// to the vocabulary size, so text tokenizes at a realistic few characters per
// token and every id of the vocabulary exists.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace kvserve {

enum class TokenizerStyle {
  kByteLevel,      // GPT-2 / Llama-3 / Qwen2: Split regex + ByteLevel, specials at the end
  kSentencePiece,  // Llama-2 / TinyLlama / Mistral: ▁ normalizer, byte_fallback, <unk> <s> </s> first
  kBytes,          // byte_fallback only, one token per byte (the built-in model's)
};

struct SyntheticTokenizerSpec {
  TokenizerStyle style = TokenizerStyle::kByteLevel;
  int vocab_size = 0;  // all ids, special tokens included
  /// Byte-level: special tokens, placed at the end of the vocabulary (the
  /// first is BOS). SentencePiece and bytes: ignored (<unk> <s> </s>).
  std::vector<std::string> special_tokens;
  std::string split_regex;  // byte-level pre-tokenizer pattern
  uint64_t seed = 1;
  /// Byte-level: prepend the first special token as BOS (Llama-3) or not (Qwen2).
  bool add_bos = true;
};

/// The Llama-3 pre-tokenizer pattern (also used by the fixtures).
extern const char kLlama3SplitRegex[];
/// Qwen2's pattern (single digits).
extern const char kQwen2SplitRegex[];

/// tokenizer.json text.
absl::StatusOr<std::string> MakeTokenizerJson(const SyntheticTokenizerSpec& spec);

}  // namespace kvserve
