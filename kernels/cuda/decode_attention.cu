// Host side of the decode attention: the split plan and the dtype switch.
// The kernels are instantiated in decode_attention_{f32,bf16,f16}.cu.
#include <algorithm>

#include "kernels/cuda/decode_attention.cuh"

namespace kvserve::cuda {
namespace decode {
extern template absl::Status LaunchForDType<float>(const DecodeAttentionParams&, const DecodePlan&,
                                                   float*, DeviceError*, cudaStream_t);
extern template absl::Status LaunchForDType<__nv_bfloat16>(const DecodeAttentionParams&,
                                                           const DecodePlan&, float*, DeviceError*,
                                                           cudaStream_t);
extern template absl::Status LaunchForDType<__half>(const DecodeAttentionParams&, const DecodePlan&,
                                                    float*, DeviceError*, cudaStream_t);
}  // namespace decode

namespace {

// The split count the plan aims for before rounding the keys per split (the
// final count never exceeds it): enough CTAs to cover the SMs twice, no
// split under 128 keys, at most kMaxSplits.
int64_t TargetSplits(int64_t num_seqs, int num_kv_heads, int group_chunks, int64_t max_context,
                     int num_sms) {
  using decode::kKeysPerPass;
  const int64_t ctas = std::max<int64_t>(1, num_seqs * num_kv_heads * group_chunks);
  const int64_t target_ctas = 2 * int64_t(std::max(num_sms, 1));
  const int64_t max_useful = (max_context + kKeysPerPass - 1) / kKeysPerPass;  // ≥ 128 keys each
  return std::clamp<int64_t>((target_ctas + ctas - 1) / ctas, 1,
                             std::min<int64_t>(max_useful, decode::kMaxSplits));
}

int GroupChunks(const AttentionShape& shape) {
  const int group = shape.num_heads / std::max(1, shape.num_kv_heads);
  return (group + decode::kMaxGroup - 1) / decode::kMaxGroup;
}

// Floats per split of one (sequence, head): D partial outputs, then (max, sum).
size_t FloatsPerSplit(const AttentionShape& shape) { return size_t(shape.head_dim) + 2; }

}  // namespace

DecodePlan PlanDecodeAttention(const DecodeAttentionParams& p, int num_sms,
                               size_t max_workspace_floats) {
  using decode::kKeysPerPass;
  DecodePlan plan;
  plan.group_chunks = GroupChunks(p.shape);
  // The longest context the launch must cover: what the caller says, capped
  // by what the block tables can address (contexts beyond either are reported).
  const int64_t addressable = p.block_tables.dim(1) * int64_t(p.cache.block_size);
  int64_t max_context = p.max_context_len > 0 ? std::min<int64_t>(p.max_context_len, addressable)
                                              : addressable;
  max_context = std::max<int64_t>(max_context, 1);
  int64_t splits =
      TargetSplits(p.num_seqs, p.shape.num_kv_heads, plan.group_chunks, max_context, num_sms);
  // What the reserved workspace holds: fewer splits rather than an allocation.
  const size_t per_split = std::max<size_t>(1, size_t(p.num_seqs) * p.shape.num_heads *
                                                   FloatsPerSplit(p.shape));
  const size_t fits = max_workspace_floats / per_split;
  if (fits < static_cast<size_t>(splits)) splits = std::max<int64_t>(1, static_cast<int64_t>(fits));
  int64_t keys = (max_context + splits - 1) / splits;
  keys = (keys + kKeysPerPass - 1) / kKeysPerPass * kKeysPerPass;
  splits = (max_context + keys - 1) / keys;
  plan.num_splits = static_cast<int>(splits);
  plan.split_keys = static_cast<int>(keys);
  if (plan.num_splits > 1) plan.workspace_floats = per_split * plan.num_splits;
  return plan;
}

size_t MaxDecodeWorkspaceFloats(int max_seqs, const AttentionShape& shape, int64_t max_context,
                                int num_sms) {
  // A plan's final split count is at most TargetSplits, which only grows
  // with the context: so the bound at max_context holds for every shorter one.
  size_t most = 0;
  const int chunks = GroupChunks(shape);
  for (int64_t b = 1; b <= max_seqs; ++b) {
    const int64_t splits =
        TargetSplits(b, shape.num_kv_heads, chunks, std::max<int64_t>(max_context, 1), num_sms);
    if (splits > 1) {
      most = std::max(most, size_t(b) * shape.num_heads * FloatsPerSplit(shape) * size_t(splits));
    }
  }
  return most;
}

absl::Status LaunchDecodeAttention(const DecodeAttentionParams& p, const DecodePlan& plan,
                                   float* workspace, DeviceError* error, cudaStream_t stream) {
  switch (p.q.dtype) {
    case DType::kFloat32:
      return decode::LaunchForDType<float>(p, plan, workspace, error, stream);
    case DType::kBFloat16:
      return decode::LaunchForDType<__nv_bfloat16>(p, plan, workspace, error, stream);
    case DType::kFloat16:
      return decode::LaunchForDType<__half>(p, plan, workspace, error, stream);
    default:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("DecodeAttention: unsupported dtype ", DTypeName(p.q.dtype)));
}

}  // namespace kvserve::cuda
