#include "engine/kv/prefix_cache_index.h"

#include <algorithm>

#include "base/logging.h"

namespace kvserve {

PrefixCacheIndex::PrefixCacheIndex(int num_blocks, int block_size)
    : block_size_(block_size),
      entries_(num_blocks),
      tokens_(static_cast<size_t>(num_blocks) * block_size) {}

absl::Span<const int32_t> PrefixCacheIndex::TokensOf(int32_t block) const {
  return absl::MakeConstSpan(tokens_).subspan(static_cast<size_t>(block) * block_size_,
                                              block_size_);
}

bool PrefixCacheIndex::Register(int32_t block, int32_t parent, BlockHash hash,
                                absl::Span<const int32_t> block_tokens) {
  KV_CHECK(static_cast<int>(block_tokens.size()) == block_size_) << "registering a partial block";
  KV_CHECK(!entries_[block].cached) << "block " << block << " registered twice";
  if (parent >= 0 && !entries_[parent].cached) return false;
  if (!by_hash_.emplace(hash, block).second) return false;  // a twin (or a collision) is cached
  Entry& e = entries_[block];
  e.cached = true;
  e.hash = hash;
  e.parent = parent;
  e.parent_generation = parent >= 0 ? entries_[parent].generation : 0;
  ++e.generation;
  std::copy(block_tokens.begin(), block_tokens.end(),
            tokens_.begin() + static_cast<ptrdiff_t>(block) * block_size_);
  return true;
}

void PrefixCacheIndex::Forget(int32_t block) {
  Entry& e = entries_[block];
  if (!e.cached) return;
  by_hash_.erase(e.hash);
  e.cached = false;
}

std::vector<int32_t> PrefixCacheIndex::Match(absl::Span<const int32_t> tokens,
                                             absl::Span<const BlockHash> hashes,
                                             int max_blocks) const {
  std::vector<int32_t> blocks;
  const int n = std::min<int>(max_blocks, static_cast<int>(hashes.size()));
  for (int i = 0; i < n; ++i) {
    auto it = by_hash_.find(hashes[i]);
    if (it == by_hash_.end()) break;
    const int32_t block = it->second;
    const Entry& e = entries_[block];
    const int32_t want_parent = blocks.empty() ? -1 : blocks.back();
    if (e.parent != want_parent) break;
    if (want_parent >= 0 && e.parent_generation != entries_[want_parent].generation) break;
    const auto want_tokens = tokens.subspan(static_cast<size_t>(i) * block_size_, block_size_);
    if (!std::equal(want_tokens.begin(), want_tokens.end(), TokensOf(block).begin())) break;
    blocks.push_back(block);
  }
  return blocks;
}

}  // namespace kvserve
