// Causal prefill attention on the tensor cores (FlashAttention-2's algorithm
// with mma.sync m16n8k16), the fast path of PrefillAttention for bf16/f16
// and head dims 64/128; the CUDA-core kernel of prefill_attention.h serves
// every other shape and checks this one at start-up (kernel_self_check.h).
//
// One CTA of 4 warps per (64-query tile, query head, sequence), the tiles
// with the most keys launched first. Each warp holds its 16 query rows as
// A fragments in registers; 64-key K and V tiles come from the paged cache
// into shared memory by cp.async, the next tile loading while this one is
// computed. Per tile a warp computes S = Q·Kᵀ (16 × 64, float32
// accumulators), masks the future, updates its rows' online softmax in base
// 2, and multiplies the probabilities, repacked in registers as the A
// operand, by V. Tiles entirely in a warp's future are skipped. Shared
// memory holds O(tile · D), whatever the context.
#pragma once

#include <cuda_runtime.h>

#include "absl/status/status.h"
#include "kernels/cuda/device_error.h"
#include "kernels/op_params.h"

namespace kvserve::cuda {

/// Whether the tensor-core kernel serves this op (dtype, head dim, block size).
bool PrefillMmaServes(const PrefillAttentionParams& p);

/// Computes p.out from p.q and the cache (the chunk's K/V must be in it).
/// The same contract and device errors as LaunchPrefillAttention.
absl::Status LaunchPrefillMma(const PrefillAttentionParams& p, DeviceError* error,
                              cudaStream_t stream);

}  // namespace kvserve::cuda
