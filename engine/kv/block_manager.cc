#include "engine/kv/block_manager.h"

#include "base/logging.h"

namespace kvserve {

BlockManager::BlockManager(int num_blocks, int block_size, bool enable_prefix_caching)
    : num_blocks_(num_blocks),
      block_size_(block_size),
      lru_pos_(num_blocks),
      ref_counts_(num_blocks, 0) {
  KV_CHECK(num_blocks > 0 && block_size > 0) << num_blocks << " blocks of " << block_size;
  free_.reserve(num_blocks);
  // Highest id at the bottom, so that blocks are handed out 0, 1, 2, ...
  for (int32_t b = num_blocks - 1; b >= 0; --b) free_.push_back(b);
  if (enable_prefix_caching) index_ = std::make_unique<PrefixCacheIndex>(num_blocks, block_size);
}

PrefixHit BlockManager::FindCachedPrefix(absl::Span<const int32_t> tokens,
                                         absl::Span<const BlockHash> hashes) const {
  PrefixHit hit;
  if (!index_ || tokens.empty()) return hit;
  const int max_blocks = (static_cast<int>(tokens.size()) - 1) / block_size_;
  hit.blocks = index_->Match(tokens, hashes, max_blocks);
  for (int32_t block : hit.blocks) hit.num_free += ref_counts_[block] == 0;
  return hit;
}

bool BlockManager::CanAllocate(int num_tokens, int reserve, const PrefixHit& hit) const {
  const int fresh = BlocksFor(num_tokens) - static_cast<int>(hit.blocks.size());
  return std::max(fresh, 0) + hit.num_free + reserve <= num_free_blocks();
}

void BlockManager::Allocate(BlockTable& table, int num_tokens, const PrefixHit& hit) {
  KV_CHECK(table.empty()) << "Allocate needs an empty table";
  KV_CHECK(CanAllocate(num_tokens, 0, hit)) << "Allocate without CanAllocate";
  for (int32_t block : hit.blocks) {
    KV_CHECK(index_ && index_->IsCached(block)) << "prefix hit on uncached block " << block;
    if (ref_counts_[block]++ == 0) lru_.erase(lru_pos_[block]);
    table.push_back(block);
  }
  Append(table, num_tokens);
}

bool BlockManager::CanAppend(const BlockTable& table, int num_tokens) const {
  const int extra = BlocksFor(num_tokens) - static_cast<int>(table.size());
  return extra <= num_free_blocks();
}

int32_t BlockManager::TakeFreeBlock() {
  if (!free_.empty()) {
    const int32_t block = free_.back();
    free_.pop_back();
    return block;
  }
  const int32_t block = lru_.front();
  lru_.pop_front();
  index_->Forget(block);  // its content is about to be overwritten
  return block;
}

void BlockManager::Append(BlockTable& table, int num_tokens) {
  const int needed = BlocksFor(num_tokens);
  KV_CHECK(needed - static_cast<int>(table.size()) <= num_free_blocks())
      << "Append without CanAppend: need " << needed << ", have " << table.size() << " + "
      << num_free_blocks() << " free";
  while (static_cast<int>(table.size()) < needed) {
    const int32_t block = TakeFreeBlock();
    KV_CHECK(ref_counts_[block] == 0) << "free block " << block << " is referenced";
    ref_counts_[block] = 1;
    table.push_back(block);
  }
}

BlockTable BlockManager::Share(const BlockTable& table) {
  for (int32_t block : table) {
    KV_CHECK(ref_counts_[block] > 0) << "sharing unowned block " << block;
    ++ref_counts_[block];
  }
  return table;
}

void BlockManager::Free(BlockTable& table) {
  for (auto it = table.rbegin(); it != table.rend(); ++it) {
    const int32_t block = *it;
    KV_CHECK(ref_counts_[block] > 0) << "double free of block " << block;
    if (--ref_counts_[block] > 0) continue;
    if (index_ && index_->IsCached(block)) {
      lru_pos_[block] = lru_.insert(lru_.end(), block);
    } else {
      free_.push_back(block);
    }
  }
  table.clear();
}

int BlockManager::CacheFullBlocks(const BlockTable& table, absl::Span<const int32_t> tokens,
                                  absl::Span<const BlockHash> hashes, int num_cached,
                                  int num_computed) {
  if (!index_) return num_cached;
  const int full = std::min({num_computed / block_size_, static_cast<int>(hashes.size()),
                             static_cast<int>(table.size())});
  for (int i = num_cached; i < full; ++i) {
    const int32_t block = table[i];
    const int32_t parent = i == 0 ? -1 : table[i - 1];
    if (!index_->IsCached(block) &&
        !index_->Register(block, parent, hashes[i],
                          tokens.subspan(size_t(i) * block_size_, block_size_))) {
      break;  // a twin holds this content: this block (and so its children) stays private
    }
    num_cached = i + 1;
  }
  return num_cached;
}

}  // namespace kvserve
