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

DecodePlan PlanDecodeAttention(const DecodeAttentionParams& p, int num_sms) {
  using decode::kKeysPerPass;
  DecodePlan plan;
  const int group = p.shape.num_heads / std::max(1, p.shape.num_kv_heads);
  plan.group_chunks = (group + decode::kMaxGroup - 1) / decode::kMaxGroup;
  // The longest context the launch must cover: what the caller says, capped
  // by what the block tables can address (contexts beyond either are reported).
  const int64_t addressable = p.block_tables.dim(1) * int64_t(p.cache.block_size);
  int64_t max_context = p.max_context_len > 0 ? std::min<int64_t>(p.max_context_len, addressable)
                                              : addressable;
  max_context = std::max<int64_t>(max_context, 1);
  const int64_t ctas = std::max<int64_t>(
      1, int64_t(p.num_seqs) * p.shape.num_kv_heads * plan.group_chunks);
  const int64_t target_ctas = 2 * int64_t(std::max(num_sms, 1));
  const int64_t max_useful = (max_context + kKeysPerPass - 1) / kKeysPerPass;  // ≥ 128 keys each
  int64_t splits = std::clamp<int64_t>((target_ctas + ctas - 1) / ctas, 1,
                                       std::min<int64_t>(max_useful, decode::kMaxSplits));
  int64_t keys = (max_context + splits - 1) / splits;
  keys = (keys + kKeysPerPass - 1) / kKeysPerPass * kKeysPerPass;
  splits = (max_context + keys - 1) / keys;
  plan.num_splits = static_cast<int>(splits);
  plan.split_keys = static_cast<int>(keys);
  if (plan.num_splits > 1) {
    plan.workspace_floats = static_cast<size_t>(p.num_seqs) * p.shape.num_heads * plan.num_splits *
                            (p.shape.head_dim + 2);
  }
  return plan;
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
