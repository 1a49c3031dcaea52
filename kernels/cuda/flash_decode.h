// Split-KV paged decode attention ("flash decoding"), the fast path of
// DecodeAttention for bf16/f16 and head dims 64/128 (the reference kernel of
// decode_attention.h serves every shape and checks this one at start-up).
//
// One CTA per (split of the keys, KV head × chunk of its query group,
// sequence): the KV head's keys and values are read once for its whole query
// group (GQA). Inside, 4 warps take one-block tiles in turn; in a warp,
// kLanesPerKey lanes read a key's row as 16-byte vectors, every load of a
// tile (K and V) is issued before any is used, and each lane keeps its own
// online-softmax state, merged across lanes and warps once at the end. With
// several splits, the last CTA of a (sequence, KV head) to finish merges
// them (an atomic counter per row, reset by that CTA, so graph replays find
// it zero): no second launch.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "kernels/cuda/device_error.h"
#include "kernels/op_params.h"

namespace kvserve::cuda {

/// How a flash-decode launch is cut: host-side, before any memory is touched.
struct FlashDecodePlan {
  int num_splits = 1;    // key splits per (sequence, KV head, group chunk)
  int split_keys = 0;    // keys per split, a multiple of the CTA pass
  int group_tile = 1;    // query heads per CTA (1, 4 or 8)
  int group_chunks = 1;  // CTAs per KV head: ceil(group / group_tile)
  /// float32 workspace: [B, H, splits, D] partial outputs then [B, H,
  /// splits, 2] (max, sum); 0 when num_splits == 1 (the CTA writes out).
  size_t workspace_floats = 0;
  /// Merge counters used: [B, Hkv · group_chunks]; 0 when num_splits == 1.
  size_t counters = 0;
};

/// Whether the flash-decode kernel serves this op (dtype, head dim, block size).
bool FlashDecodeServes(const DecodeAttentionParams& p);

/// Splits so that the CTAs fill the device once (`num_sms` × `ctas_per_sm`
/// resident CTAs: FlashDecodeResidentCtas), each split holding at least one
/// CTA pass of keys, and no more splits than `max_workspace_floats` of
/// workspace and `max_counters` merge counters allow (down to one split,
/// which needs neither): fewer splits are as exact, only slower. The kernel
/// cuts each sequence's own context into the plan's split count (so
/// split_keys is the longest context's cut). Requires FlashDecodeServes(p).
FlashDecodePlan PlanFlashDecode(const DecodeAttentionParams& p, int num_sms,
                                size_t max_workspace_floats = SIZE_MAX,
                                size_t max_counters = SIZE_MAX, int ctas_per_sm = 4);

/// CTAs of the kernel that serves (dtype, head_dim, block_size, group)
/// resident on one SM of the current device (CUDA's occupancy calculator);
/// 0 when it cannot say (no device, not served).
int FlashDecodeResidentCtas(DType dtype, int head_dim, int block_size, int group);

/// The most workspace floats and counters any plan for at most `max_seqs`
/// sequences of `shape` in `dtype`, contexts up to `max_context`, asks for.
struct FlashDecodeReservation {
  size_t workspace_floats = 0;
  size_t counters = 0;
};
FlashDecodeReservation MaxFlashDecodeReservation(int max_seqs, const AttentionShape& shape,
                                                 DType dtype, int block_size,
                                                 int64_t max_context, int num_sms,
                                                 int ctas_per_sm = 4);

/// Computes p.out from p.q and the cache (the new token's K/V must be in it
/// already). `workspace` and `counters` (zeroed once, left zeroed by every
/// launch) as the plan needs them (may be null when it needs none).
absl::Status LaunchFlashDecode(const DecodeAttentionParams& p, const FlashDecodePlan& plan,
                               float* workspace, int* counters, DeviceError* error,
                               cudaStream_t stream);

}  // namespace kvserve::cuda
