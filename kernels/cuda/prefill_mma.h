// Causal prefill attention on the tensor cores (FlashAttention-2's algorithm
// with mma.sync m16n8k16), the fast path of PrefillAttention for bf16/f16
// and head dims 64/128; the CUDA-core kernel of prefill_attention.h serves
// every other shape and checks this one at start-up (kernel_self_check.h).
//
// One CTA of 4 warps per (128-query tile, query head, sequence), the tiles
// with the most keys launched first. Each warp computes 32 query rows as two
// 16-row m-tiles, Q's A fragments in registers at D = 64 and loaded from
// shared memory per k-step at D = 128. 64-key K and V tiles come from the
// paged cache into shared memory by cp.async, the next tile loading while
// this one is computed. Per tile (at D = 128 per half tile of 32 keys, so
// that S's accumulators fit beside O's) a warp computes S = Q·Kᵀ (float32
// accumulators), masks the future, updates its rows' online softmax in base
// 2, and multiplies the probabilities, repacked in registers as the A
// operand, by V. Tiles entirely in a warp's future are skipped. Shared
// memory holds O(tile · D), whatever the context.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "kernels/cuda/device_error.h"
#include "kernels/op_params.h"

namespace kvserve::cuda {

/// Query rows per CTA (one row group of the plan): 128, two 16-row m-tiles
/// per warp sharing each K and V fragment the warp loads (half the
/// shared-memory reads per MMA and half the K/V tile loads per query of a
/// 64-row tile). A function of the head dim so that a dim whose
/// accumulators do not fit twice can go back to 64.
constexpr int PrefillMmaTileRows(int /*head_dim*/) { return 128; }

/// Whether the tensor-core kernel serves this op (dtype, head dim, block size).
bool PrefillMmaServes(const PrefillAttentionParams& p);

/// Key splits of a launch. A step whose (query tile, head, sequence) CTAs
/// do not fill the GPU — a short chunk behind a long cached context, the
/// tail of a chunked prefill — splits each CTA's keys so that about twice
/// the SM count work at once; the last CTA of a group merges the partial
/// rows (an atomic counter, reset by it). At most kMaxPrefillSplits, each a
/// whole number of 64-key tiles and at least four of them.
inline constexpr int kMaxPrefillSplits = 16;
struct PrefillMmaPlan {
  int num_splits = 1;
  int split_keys = 0;           // keys per split, a multiple of 64 (when splits > 1)
  size_t workspace_floats = 0;  // [groups, splits, rows, D] outputs then [.., rows, 2] (max, sum)
  size_t counters = 0;          // one per (query tile, head, sequence)
};
PrefillMmaPlan PlanPrefillMma(const PrefillAttentionParams& p, int num_sms,
                              size_t max_workspace_floats = SIZE_MAX,
                              size_t max_counters = SIZE_MAX);

/// What any plan for head dim `head_dim` on `num_sms` SMs can ask for: fewer
/// than num_sms groups split, into at most 2·num_sms + groups CTAs.
struct PrefillMmaReservation {
  size_t workspace_floats = 0;
  size_t counters = 0;
};
PrefillMmaReservation MaxPrefillMmaReservation(int head_dim, int num_sms);

/// Computes p.out from p.q and the cache (the chunk's K/V must be in it).
/// The same contract and device errors as LaunchPrefillAttention.
/// `workspace` and `counters` (zeroed once, left zeroed) as the plan needs.
absl::Status LaunchPrefillMma(const PrefillAttentionParams& p, const PrefillMmaPlan& plan,
                              float* workspace, int* counters, DeviceError* error,
                              cudaStream_t stream);

}  // namespace kvserve::cuda
