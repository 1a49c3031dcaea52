// Paged decode attention: one query token per sequence, split over the KV
// length so that one long sequence still fills the GPU (split-K / "flash
// decoding"), GQA-aware (each KV head is read once for its whole group of
// query heads), with a second kernel that merges the splits.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "kernels/cuda/device_error.h"
#include "kernels/op_params.h"

namespace kvserve::cuda {

/// How a decode launch is cut: host-side, before any memory is touched.
struct DecodePlan {
  int num_splits = 1;   // KV-length splits per (sequence, KV head, group chunk)
  int split_keys = 0;   // keys per split, a multiple of 128
  int group_chunks = 1; // query heads of a group are taken 8 at a time
  /// float32 workspace the splits need: [B, H, splits, D] outputs then
  /// [B, H, splits, 2] (max, sum). 0 when num_splits == 1 (no merge).
  size_t workspace_floats = 0;
};

/// Splits so that (sequences × KV heads × group chunks × splits) CTAs cover
/// the device's `num_sms` about twice, with at least 128 keys per split, and
/// no more splits than `max_workspace_floats` of workspace can hold (the
/// backend's reservation; down to one split, which needs none). Fewer splits
/// are as exact, only slower for long contexts.
DecodePlan PlanDecodeAttention(const DecodeAttentionParams& p, int num_sms,
                               size_t max_workspace_floats = SIZE_MAX);

/// The most workspace any plan for at most `max_seqs` sequences of
/// `shape`, with contexts of at most `max_context`, can ask for: what the
/// backend reserves once, so that a step never allocates.
size_t MaxDecodeWorkspaceFloats(int max_seqs, const AttentionShape& shape, int64_t max_context,
                                int num_sms);

/// Computes p.out from p.q and the cache (the new token's K/V must be in it
/// already). `workspace`: plan.workspace_floats floats (may be null when 0).
absl::Status LaunchDecodeAttention(const DecodeAttentionParams& p, const DecodePlan& plan,
                                   float* workspace, DeviceError* error, cudaStream_t stream);

}  // namespace kvserve::cuda
