#include "engine/kv/block_hash.h"

#include "absl/hash/hash.h"

namespace kvserve {

// absl::Hash is seeded per process: fine, the hashes never leave it.
BlockHash HashBlock(BlockHash parent, absl::Span<const int32_t> block_tokens) {
  return absl::HashOf(parent, block_tokens);
}

void ExtendBlockHashes(absl::Span<const int32_t> tokens, int block_size,
                       std::vector<BlockHash>& hashes) {
  const size_t full_blocks = tokens.size() / static_cast<size_t>(block_size);
  while (hashes.size() < full_blocks) {
    const BlockHash parent = hashes.empty() ? kNoParentHash : hashes.back();
    hashes.push_back(HashBlock(parent, tokens.subspan(hashes.size() * block_size, block_size)));
  }
}

}  // namespace kvserve
