// Paged KV bookkeeping: which of the pool's fixed-size blocks are free, and
// how many sequences hold each one (ref counts make prefix sharing and
// parallel sampling possible without copies). Pure logic, no device memory.
//
// Check/commit pairs: Can*() says whether an operation would succeed; the
// operation itself must then be called only when it would (a KV_CHECK guards).
#pragma once

#include <cstdint>
#include <vector>

#include "base/ceil_div.h"

namespace kvserve {

/// A sequence's blocks in order: token i lives in block table[i / block_size].
using BlockTable = std::vector<int32_t>;

class BlockManager {
 public:
  BlockManager(int num_blocks, int block_size);

  int num_blocks() const { return num_blocks_; }
  int block_size() const { return block_size_; }
  int num_free_blocks() const { return static_cast<int>(free_.size()); }
  int num_used_blocks() const { return num_blocks_ - num_free_blocks(); }
  /// Blocks needed to hold `num_tokens` tokens.
  int BlocksFor(int num_tokens) const { return CeilDiv(num_tokens, block_size_); }

  /// Whether a new sequence can get blocks for its first `num_tokens` tokens
  /// while leaving `reserve` blocks free.
  bool CanAllocate(int num_tokens, int reserve = 0) const;
  /// Gives an empty `table` blocks for `num_tokens` tokens.
  void Allocate(BlockTable& table, int num_tokens);

  /// Whether `table` can grow to hold `num_tokens` tokens in all.
  bool CanAppend(const BlockTable& table, int num_tokens) const;
  /// Grows `table` to hold `num_tokens` tokens in all.
  void Append(BlockTable& table, int num_tokens);

  /// A second owner for every block of `table` (prefix sharing, forks).
  BlockTable Share(const BlockTable& table);
  /// Drops the table's references; blocks nobody holds return to the free list.
  void Free(BlockTable& table);

  int ref_count(int32_t block) const { return ref_counts_[block]; }

 private:
  int num_blocks_;
  int block_size_;
  std::vector<int32_t> free_;  // LIFO: recently freed blocks are reused first
  std::vector<int32_t> ref_counts_;
};

}  // namespace kvserve
