// Writes a step's new keys and values into the paged cache through the slot
// mapping: the first half of both attention ops.
#pragma once

#include <cuda_runtime.h>

#include "absl/status/status.h"
#include "kernels/cuda/device_error.h"
#include "kernels/op_params.h"

namespace kvserve::cuda {

/// k, v: [T, Hkv, D]; slot_mapping: [T] int32; cache.k/v: [blocks, bs, Hkv, D]
/// of k's dtype. A slot outside the cache is reported through `error` and
/// that token is not written.
absl::Status LaunchKvCacheWrite(Tensor k, Tensor v, Tensor slot_mapping, const PagedKvCache& cache,
                                DeviceError* error, cudaStream_t stream);

}  // namespace kvserve::cuda
