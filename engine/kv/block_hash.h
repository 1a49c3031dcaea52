// Content hashes of full KV blocks for prefix caching. A block's hash covers
// its own tokens and, through its parent's hash, every token before it, so
// equal hashes at block i mean (barring a collision) equal prefixes of
// (i + 1) * block_size tokens. Collisions never cause a wrong reuse: the
// PrefixCacheIndex compares the tokens and the parent block on every hit.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/types/span.h"

namespace kvserve {

using BlockHash = uint64_t;

/// Hash of one full block given its parent's hash (kNoParentHash for block 0).
inline constexpr BlockHash kNoParentHash = 0;
BlockHash HashBlock(BlockHash parent, absl::Span<const int32_t> block_tokens);

/// Appends to `hashes` the hash of every full block of `tokens` it does not
/// cover yet. Tokens only ever grow, so earlier hashes stay valid.
void ExtendBlockHashes(absl::Span<const int32_t> tokens, int block_size,
                       std::vector<BlockHash>& hashes);

}  // namespace kvserve
