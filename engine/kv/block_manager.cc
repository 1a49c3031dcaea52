#include "engine/kv/block_manager.h"

#include "base/logging.h"

namespace kvserve {

BlockManager::BlockManager(int num_blocks, int block_size)
    : num_blocks_(num_blocks), block_size_(block_size), ref_counts_(num_blocks, 0) {
  KV_CHECK(num_blocks > 0 && block_size > 0) << num_blocks << " blocks of " << block_size;
  free_.reserve(num_blocks);
  // Highest id at the bottom, so that blocks are handed out 0, 1, 2, ...
  for (int32_t b = num_blocks - 1; b >= 0; --b) free_.push_back(b);
}

bool BlockManager::CanAllocate(int num_tokens, int reserve) const {
  return BlocksFor(num_tokens) + reserve <= num_free_blocks();
}

void BlockManager::Allocate(BlockTable& table, int num_tokens) {
  KV_CHECK(table.empty()) << "Allocate needs an empty table";
  Append(table, num_tokens);
}

bool BlockManager::CanAppend(const BlockTable& table, int num_tokens) const {
  const int extra = BlocksFor(num_tokens) - static_cast<int>(table.size());
  return extra <= num_free_blocks();
}

void BlockManager::Append(BlockTable& table, int num_tokens) {
  const int needed = BlocksFor(num_tokens);
  KV_CHECK(needed - static_cast<int>(table.size()) <= num_free_blocks())
      << "Append without CanAppend: need " << needed << ", have " << table.size() << " + "
      << num_free_blocks() << " free";
  while (static_cast<int>(table.size()) < needed) {
    const int32_t block = free_.back();
    free_.pop_back();
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
  for (int32_t block : table) {
    KV_CHECK(ref_counts_[block] > 0) << "double free of block " << block;
    if (--ref_counts_[block] == 0) free_.push_back(block);
  }
  table.clear();
}

}  // namespace kvserve
