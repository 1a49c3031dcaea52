// Paged KV bookkeeping: which of the pool's fixed-size blocks are free, and
// how many sequences hold each one (ref counts make prefix sharing and
// parallel sampling possible without copies). Pure logic, no device memory.
//
// With prefix caching on, a block that is full and computed is registered
// under the hash of its tokens and all tokens before it (PrefixCacheIndex).
// When no sequence holds it any more it is not wiped: it waits in an LRU list
// of free-but-cached blocks, counted as free, until its space is needed.
// Allocation takes never-cached blocks first, then evicts the least recently
// freed cached block. A new sequence starts with the cached blocks of its
// longest cached prefix (FindCachedPrefix), shared by ref count.
//
// Check/commit pairs: Can*() says whether an operation would succeed; the
// operation itself must then be called only when it would (a KV_CHECK guards).
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <vector>

#include "absl/types/span.h"
#include "engine/kv/block_hash.h"
#include "engine/kv/prefix_cache_index.h"
#include "base/ceil_div.h"

namespace kvserve {

/// A sequence's blocks in order: token i lives in block table[i / block_size].
using BlockTable = std::vector<int32_t>;

/// The cached blocks a new sequence can start from.
struct PrefixHit {
  std::vector<int32_t> blocks;  // the prefix's blocks, in order
  int num_free = 0;             // of them, free-but-cached: taking them uses free room
  bool empty() const { return blocks.empty(); }
};

class BlockManager {
 public:
  BlockManager(int num_blocks, int block_size, bool enable_prefix_caching = false);

  int num_blocks() const { return num_blocks_; }
  int block_size() const { return block_size_; }
  bool prefix_caching() const { return index_ != nullptr; }
  /// Free blocks, cached or not: all of them can be handed out.
  int num_free_blocks() const { return static_cast<int>(free_.size() + lru_.size()); }
  int num_used_blocks() const { return num_blocks_ - num_free_blocks(); }
  /// Blocks whose content is registered, in use or free.
  int num_cached_blocks() const { return index_ ? index_->num_cached_blocks() : 0; }
  /// Blocks needed to hold `num_tokens` tokens.
  int BlocksFor(int num_tokens) const { return CeilDiv(num_tokens, block_size_); }

  /// The longest cached prefix of `tokens` (whose full blocks hash to
  /// `hashes`), leaving at least the last token to compute so that the step
  /// computing it samples. Empty when prefix caching is off.
  PrefixHit FindCachedPrefix(absl::Span<const int32_t> tokens,
                             absl::Span<const BlockHash> hashes) const;

  /// Whether a new sequence can get blocks for its first `num_tokens` tokens,
  /// starting from `hit`'s blocks, while leaving `reserve` blocks free.
  bool CanAllocate(int num_tokens, int reserve = 0, const PrefixHit& hit = {}) const;
  /// Gives an empty `table` `hit`'s blocks, then new ones up to `num_tokens` tokens.
  void Allocate(BlockTable& table, int num_tokens, const PrefixHit& hit = {});

  /// Whether `table` can grow to hold `num_tokens` tokens in all.
  bool CanAppend(const BlockTable& table, int num_tokens) const;
  /// Grows `table` to hold `num_tokens` tokens in all.
  void Append(BlockTable& table, int num_tokens);

  /// A second owner for every block of `table` (prefix sharing, forks).
  BlockTable Share(const BlockTable& table);
  /// Drops the table's references. Blocks nobody holds become free: cached
  /// ones at the recent end of the LRU list, the table's first block last
  /// (so a sequence's tail is evicted before its head, which others share).
  void Free(BlockTable& table);

  /// Registers the full blocks among the first `num_computed` tokens of a
  /// sequence (`hashes` covering them), from block `num_cached` on; returns
  /// how many leading blocks of `table` are registered now. No-op when off.
  int CacheFullBlocks(const BlockTable& table, absl::Span<const int32_t> tokens,
                      absl::Span<const BlockHash> hashes, int num_cached, int num_computed);

  int ref_count(int32_t block) const { return ref_counts_[block]; }

 private:
  /// A free block for new content: a never-cached one, else the LRU's oldest.
  int32_t TakeFreeBlock();

  int num_blocks_;
  int block_size_;
  std::vector<int32_t> free_;  // never-cached free blocks; LIFO: recently freed reused first
  std::list<int32_t> lru_;     // free-but-cached blocks, least recently freed first
  std::vector<std::list<int32_t>::iterator> lru_pos_;  // [num_blocks]; valid while in lru_
  std::vector<int32_t> ref_counts_;
  std::unique_ptr<PrefixCacheIndex> index_;  // null when prefix caching is off
};

}  // namespace kvserve
