// The tokens one request's penalties look at, kept as the flat lists the
// sampler takes (LogitAdjustments' seen_tokens / seen_counts): a step copies
// them as they are, and a generated token updates one entry. Work per step is
// O(distinct tokens), never O(vocabulary).
#pragma once

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/types/span.h"

namespace kvserve {

class TokenCounts {
 public:
  /// Lists the prompt's distinct tokens with a generated count of 0 (for the
  /// repetition penalty, which covers the prompt too).
  void AddPrompt(absl::Span<const int32_t> prompt);
  void AddGenerated(int32_t token);

  absl::Span<const int32_t> tokens() const { return tokens_; }
  absl::Span<const int32_t> counts() const { return counts_; }

 private:
  int32_t& CountOf(int32_t token);

  absl::flat_hash_map<int32_t, size_t> index_;  // token → its position in the lists
  std::vector<int32_t> tokens_;
  std::vector<int32_t> counts_;  // times generated
};

}  // namespace kvserve
