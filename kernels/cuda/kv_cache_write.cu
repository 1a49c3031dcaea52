#include <cstdint>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/kv_cache_write.h"

namespace kvserve::cuda {
namespace {

constexpr int kThreads = 128;

// One block per token; a token's K (and V) row is Hkv * D contiguous
// elements, copied in words of W.
template <typename W>
__global__ void KvCacheWriteKernel(const W* __restrict__ k,          // [T, words]
                                   const W* __restrict__ v,          // [T, words]
                                   const int32_t* __restrict__ slots,  // [T]
                                   int64_t num_slots, int64_t words,
                                   W* __restrict__ k_cache,          // [num_slots, words]
                                   W* __restrict__ v_cache,          // [num_slots, words]
                                   DeviceError* error) {
  const int64_t t = blockIdx.x;
  const int32_t slot = slots[t];
  if (slot == kPadSlot) return;  // a padded row (batch bucket): nothing to keep
  if (slot < 0 || slot >= num_slots) {
    if (threadIdx.x == 0) ReportDeviceError(error, DeviceErrorCode::kKvSlot, slot, num_slots);
    return;
  }
  for (int64_t i = threadIdx.x; i < words; i += blockDim.x) {
    k_cache[int64_t(slot) * words + i] = k[t * words + i];
    v_cache[int64_t(slot) * words + i] = v[t * words + i];
  }
}

}  // namespace

absl::Status LaunchKvCacheWrite(Tensor k, Tensor v, Tensor slot_mapping, const PagedKvCache& cache,
                                DeviceError* error, cudaStream_t stream) {
  const int64_t tokens = k.dim(0);
  if (tokens == 0) return absl::OkStatus();
  const size_t row_bytes = static_cast<size_t>(k.row_elems()) * DTypeSize(k.dtype);
  const int64_t num_slots = cache.k.dim(0) * cache.block_size;
  auto launch = [&](auto word) {
    using W = decltype(word);
    const int64_t words = static_cast<int64_t>(row_bytes / sizeof(W));
    KvCacheWriteKernel<W><<<static_cast<unsigned>(tokens), kThreads, 0, stream>>>(
        static_cast<const W*>(k.data), static_cast<const W*>(v.data),
        slot_mapping.as<const int32_t>(), num_slots, words, static_cast<W*>(cache.k.data),
        static_cast<W*>(cache.v.data), error);
  };
  auto aligned = [&](size_t a) {
    for (const void* p : {k.data, v.data, cache.k.data, cache.v.data}) {
      if (reinterpret_cast<uintptr_t>(p) % a != 0) return false;
    }
    return row_bytes % a == 0;
  };
  // Rows of the served head dims are multiples of 32 bytes: 16-byte words.
  if (aligned(16)) {
    launch(uint4{});
  } else if (aligned(4)) {
    launch(uint32_t{});
  } else {
    launch(uint16_t{});
  }
  RETURN_IF_LAUNCH_ERROR();
  return absl::OkStatus();
}

}  // namespace kvserve::cuda
