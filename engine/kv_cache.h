// The paged KV cache's memory: per layer, K and V pools of shape
// [num_blocks, block_size, num_kv_heads, head_dim] in the compute dtype.
// Which block belongs to which sequence is the BlockManager's business.
#pragma once

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/model_config.h"
#include "kernels/backend.h"

namespace kvserve {

class KvCache {
 public:
  static absl::StatusOr<std::unique_ptr<KvCache>> Create(Backend& backend,
                                                         const ModelConfig& config,
                                                         int num_blocks, int block_size);
  /// Bytes one block takes across all layers, K and V.
  static size_t BytesPerBlock(const ModelConfig& config, int block_size, DType dtype);

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
