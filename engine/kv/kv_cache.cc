#include "engine/kv/kv_cache.h"

#include "base/status_macros.h"

namespace kvserve {

size_t KvCache::BytesPerBlock(const KvCacheShape& c, int block_size, DType dtype) {
  return size_t(2) * c.num_layers * block_size * c.num_kv_heads * c.head_dim * DTypeSize(dtype);
}

absl::StatusOr<std::unique_ptr<KvCache>> KvCache::Create(Backend& backend, const KvCacheShape& c,
                                                         int num_blocks, int block_size) {
  auto cache = std::make_unique<KvCache>();
  cache->num_blocks_ = num_blocks;
  cache->block_size_ = block_size;
  const DType dtype = backend.compute_dtype();
  for (int i = 0; i < c.num_layers; ++i) {
    PagedKvCache layer;
    layer.block_size = block_size;
    for (Tensor* t : {&layer.k, &layer.v}) {
      const size_t bytes = size_t(num_blocks) * block_size * c.num_kv_heads * c.head_dim * DTypeSize(dtype);
      ASSIGN_OR_RETURN(DeviceBufferPtr buffer, backend.Allocate(bytes));
      *t = buffer->View(dtype, {num_blocks, block_size, c.num_kv_heads, c.head_dim});
      cache->bytes_ += bytes;
      cache->storage_.push_back(std::move(buffer));
    }
    cache->layers_.push_back(layer);
  }
  return cache;
}

}  // namespace kvserve
