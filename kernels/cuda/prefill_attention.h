// Causal attention over a packed, variable-length batch of prompt chunks,
// reading every key (earlier chunks too) through the paged block table. The
// chunk's own K/V must already be in the cache (LaunchKvCacheWrite first).
#pragma once

#include <cuda_runtime.h>

#include "absl/status/status.h"
#include "kernels/cuda/device_error.h"
#include "kernels/op_params.h"

namespace kvserve::cuda {

/// Computes p.out from p.q and the cache (p.k / p.v are not read: they are
/// in the cache). Sizes the grid from p.max_q_len (or the token count when
/// it is 0); a sequence with more queries is reported through `error`, as
/// are bad block ids and contexts the block table cannot hold.
absl::Status LaunchPrefillAttention(const PrefillAttentionParams& p, DeviceError* error,
                                    cudaStream_t stream);

}  // namespace kvserve::cuda
