#include "engine/core/token_counts.h"

namespace kvserve {

int32_t& TokenCounts::CountOf(int32_t token) {
  auto [it, inserted] = index_.try_emplace(token, tokens_.size());
  if (inserted) {
    tokens_.push_back(token);
    counts_.push_back(0);
  }
  return counts_[it->second];
}

void TokenCounts::AddPrompt(absl::Span<const int32_t> prompt) {
  for (int32_t t : prompt) CountOf(t);
}

void TokenCounts::AddGenerated(int32_t token) { ++CountOf(token); }

}  // namespace kvserve
