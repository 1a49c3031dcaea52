// tokenizer.json "model" of type BPE: a vocabulary and ranked merges. A word is
// split into characters (or byte-fallback tokens, or the unknown token), then
// the best-ranked adjacent pair is merged until no merge applies.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/node_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace kvserve::hf {

class BpeModel {
 public:
  /// Parses the "model" value. Refuses other model types, dropout, merges of
  /// unknown tokens, and negative, oversized or duplicated ids.
  static absl::StatusOr<std::unique_ptr<BpeModel>> Parse(const nlohmann::json& value,
                                                         absl::string_view path);

  /// Appends the ids of one pre-tokenized word. Thread-safe.
  void Tokenize(absl::string_view word, std::vector<int32_t>* ids) const;

  std::optional<int32_t> TokenToId(absl::string_view token) const;
  /// Null when the vocabulary has no such id.
  const std::string* IdToToken(int32_t id) const;
  /// Entries in the vocabulary (Hugging Face's get_vocab_size()).
  int size() const { return static_cast<int>(vocab_.size()); }
  /// Ids must be below this (a sparse vocabulary must not cost gigabytes).
  static constexpr int32_t kMaxId = 1 << 24;
  /// Largest id + 1 (0 when empty).
  int id_limit() const { return static_cast<int>(id_to_token_.size()); }

 private:
  struct MergeResult {
    int32_t rank;
    int32_t new_id;
  };
  static uint64_t PairKey(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) |
           static_cast<uint32_t>(right);
  }

  BpeModel() = default;
  absl::Status AddMerge(const std::string& left, const std::string& right, int32_t rank,
                        absl::string_view path);
  // The initial symbols of a word: one per character, or byte fallback, or unk.
  std::vector<std::pair<int32_t, size_t>> InitialSymbols(absl::string_view word) const;
  std::vector<int32_t> MergeWord(absl::string_view word) const;

  absl::node_hash_map<std::string, int32_t> vocab_;  // nodes: id_to_token_ points at keys
  std::vector<const std::string*> id_to_token_;     // null where no token has the id
  absl::flat_hash_map<uint64_t, MergeResult> merges_;
  std::optional<int32_t> unk_id_;
  bool fuse_unk_ = false;
  bool byte_fallback_ = false;
  bool ignore_merges_ = false;
  std::string continuing_subword_prefix_;
  std::string end_of_word_suffix_;
  std::array<std::optional<int32_t>, 256> byte_ids_;  // <0xXX> tokens

  // Words seen before and their ids: a bounded cache (cleared when full).
  static constexpr size_t kCacheCapacity = 10000;
  static constexpr size_t kMaxCachedWordBytes = 256;
  mutable std::mutex cache_mutex_;
  mutable absl::flat_hash_map<std::string, std::vector<int32_t>> cache_;
};

}  // namespace kvserve::hf
