// The paged KV cache's memory: per layer, K and V pools of shape
// [num_blocks, block_size, num_kv_heads, head_dim] in the compute dtype.
// Which block belongs to which sequence is the BlockManager's business.
#pragma once

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/backend.h"

namespace kvserve {

/// What the pool's size depends on, from the model's config.
struct KvCacheShape {
  int num_layers = 0;
  int num_kv_heads = 0;
  int head_dim = 0;
};

class KvCache {
 public:
  static absl::StatusOr<std::unique_ptr<KvCache>> Create(Backend& backend,
                                                         const KvCacheShape& shape,
                                                         int num_blocks, int block_size);
  /// Bytes one block takes across all layers, K and V.
  static size_t BytesPerBlock(const KvCacheShape& shape, int block_size, DType dtype);

  PagedKvCache layer(int i) const { return layers_[i]; }
  int num_blocks() const { return num_blocks_; }
  int block_size() const { return block_size_; }
  size_t bytes() const { return bytes_; }

 private:
  int num_blocks_ = 0;
  int block_size_ = 0;
  size_t bytes_ = 0;
  std::vector<DeviceBufferPtr> storage_;
  std::vector<PagedKvCache> layers_;
};

}  // namespace kvserve
