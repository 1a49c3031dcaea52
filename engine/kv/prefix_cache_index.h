// Which blocks hold which token content, for prefix caching. A full,
// computed block is registered under its chained hash (block_hash.h); a later
// sequence with the same leading tokens finds those blocks and skips
// computing them. Pure bookkeeping: the BlockManager decides when a block is
// registered (full and computed) and when its content is forgotten (the block
// is about to be overwritten).
//
// Exactness does not rest on the 64-bit hash: every hit compares the block's
// tokens and checks that its parent is the block matched just before, with
// the parent's content unchanged since (a per-block generation, bumped on each
// registration). So a hit is the same token prefix, or it is no hit.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/types/span.h"
#include "engine/kv/block_hash.h"

namespace kvserve {

class PrefixCacheIndex {
 public:
  PrefixCacheIndex(int num_blocks, int block_size);

  /// Whether `block` holds registered content (in use or free-but-cached).
  bool IsCached(int32_t block) const { return entries_[block].cached; }
  int num_cached_blocks() const { return static_cast<int>(by_hash_.size()); }

  /// Records that `block` holds `block_tokens` following `parent` (-1 for a
  /// sequence's first block), whose content must be registered. Returns false
  /// (and records nothing) when the parent is not cached or another block
  /// already holds this content: the block then simply stays private.
  bool Register(int32_t block, int32_t parent, BlockHash hash,
                absl::Span<const int32_t> block_tokens);
  /// Forgets the block's content: it is about to be overwritten.
  void Forget(int32_t block);

  /// The blocks holding the longest registered prefix of `tokens`, at most
  /// `max_blocks` of them; `hashes` are the chained hashes of its full blocks.
  std::vector<int32_t> Match(absl::Span<const int32_t> tokens, absl::Span<const BlockHash> hashes,
                             int max_blocks) const;

 private:
  struct Entry {
    bool cached = false;
    BlockHash hash = 0;
    int32_t parent = -1;
    uint32_t parent_generation = 0;
    uint32_t generation = 0;  // bumped on every registration of this block
  };
  absl::Span<const int32_t> TokensOf(int32_t block) const;

  int block_size_;
  absl::flat_hash_map<BlockHash, int32_t> by_hash_;
  std::vector<Entry> entries_;   // [num_blocks]
  std::vector<int32_t> tokens_;  // [num_blocks * block_size]: content of registered blocks
};

}  // namespace kvserve
