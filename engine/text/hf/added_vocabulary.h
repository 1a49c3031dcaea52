// tokenizer.json "added_tokens": tokens matched in the input text before the
// model sees it (special tokens like <|eot_id|>, and user-added words).
//
// As in Hugging Face: tokens with "normalized": false are matched in the
// original text; the rest in the normalized text (their content normalized
// too). Matching is leftmost-longest and non-overlapping; "single_word" drops
// a match inside a word, "lstrip"/"rstrip" absorb the whitespace beside it.
// An added token's id is its id in the model vocabulary when it has one, else
// the next free id past the vocabulary (the file's "id" is only a hint there).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/text/hf/bpe_model.h"
#include "engine/text/hf/normalizer.h"
#include "engine/text/hf/piece.h"
#include "nlohmann/json.hpp"

namespace kvserve::hf {

struct AddedToken {
  std::string content;
  bool single_word = false, lstrip = false, rstrip = false, normalized = true, special = false;
  bool operator==(const AddedToken&) const = default;
};

class AddedVocabulary {
 public:
  /// Parses the "added_tokens" array (null or absent: none).
  static absl::StatusOr<std::unique_ptr<AddedVocabulary>> Parse(const nlohmann::json* value,
                                                                const BpeModel& model,
                                                                const Normalizer* normalizer);

  /// Splits the pieces on tokens matched in the original text.
  void SplitOriginal(std::vector<Piece>& pieces) const;
  /// Normalizes the other pieces, then splits them on tokens matched there.
  void NormalizeAndSplit(std::vector<Piece>& pieces, const Normalizer* normalizer) const;

  /// The string an added token id decodes from, or null. As in Hugging Face,
  /// a "normalized" token's string is its normalized content (so with a
  /// SentencePiece normalizer, "hello" decodes from "▁hello").
  const std::string* IdToString(int32_t id) const;
  /// Whether `token` is the content of a special token (skipped when decoding
  /// with skip_special_tokens).
  bool IsSpecial(absl::string_view token) const { return special_set_.contains(token); }
  /// Largest added id + 1 (0 when none).
  int id_limit() const { return id_limit_; }
  int size() const { return static_cast<int>(by_id_.size()); }

 private:
  // Leftmost-longest matcher over a set of strings.
  struct Matcher {
    std::vector<std::pair<std::string, int32_t>> patterns;  // (text, id)
    std::array<std::vector<size_t>, 256> by_first_byte;  // pattern indices, longest first
    void Build();
  };

  AddedVocabulary() = default;
  void Add(const AddedToken& token, const BpeModel& model);
  std::vector<Piece> SplitOne(const Piece& piece, const Matcher& matcher) const;

  absl::flat_hash_map<std::string, int32_t> ids_;  // content → id
  absl::flat_hash_map<int32_t, AddedToken> by_id_;
  absl::flat_hash_map<int32_t, std::string> strings_;  // id → string it decodes from
  std::vector<AddedToken> special_tokens_, plain_tokens_;  // in file order
  absl::flat_hash_set<std::string> special_set_;
  Matcher original_, normalized_;
  int id_limit_ = 0;
};

}  // namespace kvserve::hf
