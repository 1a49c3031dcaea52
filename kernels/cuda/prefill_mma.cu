// Host side of the tensor-core prefill: which ops it serves, and the dtype
// switch. The kernels are instantiated in prefill_mma_{bf16,f16}.cu.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/prefill_mma.h"
#include "kernels/dtype.h"

namespace kvserve::cuda {
namespace prefill_mma {
template <typename T>
absl::Status LaunchForDType(const PrefillAttentionParams&, const PrefillMmaPlan&, float*, int*,
                            DeviceError*, cudaStream_t);
extern template absl::Status LaunchForDType<__nv_bfloat16>(const PrefillAttentionParams&,
                                                           const PrefillMmaPlan&, float*, int*,
                                                           DeviceError*, cudaStream_t);
extern template absl::Status LaunchForDType<__half>(const PrefillAttentionParams&,
                                                    const PrefillMmaPlan&, float*, int*,
                                                    DeviceError*, cudaStream_t);
}  // namespace prefill_mma

namespace {
constexpr int kTileKeys = 64;        // keys per tile
constexpr int kMinTilesPerSplit = 4;  // a split below 256 keys is not worth its merge
}  // namespace

PrefillMmaPlan PlanPrefillMma(const PrefillAttentionParams& p, int num_sms,
                              size_t max_workspace_floats, size_t max_counters) {
  PrefillMmaPlan plan;
  const int64_t tokens = p.q.dim(0);
  const int64_t max_q = p.max_q_len > 0 ? p.max_q_len : tokens;
  const int64_t rows = PrefillMmaTileRows(p.shape.head_dim);
  const int64_t groups = (max_q + rows - 1) / rows * p.shape.num_heads * p.num_seqs;
  const int64_t addressable = p.block_tables.dim(1) * int64_t(p.cache.block_size);
  const int64_t max_context =
      p.max_context_len > 0 ? std::min<int64_t>(p.max_context_len, addressable) : addressable;
  if (groups <= 0 || groups >= num_sms || max_context < kMinTilesPerSplit * kTileKeys) return plan;
  int64_t splits = std::min<int64_t>({(2 * int64_t(num_sms) + groups - 1) / groups,
                                      max_context / (kMinTilesPerSplit * kTileKeys),
                                      kMaxPrefillSplits});
  if (splits <= 1) return plan;
  int64_t keys = (max_context + splits - 1) / splits;
  keys = (keys + kTileKeys - 1) / kTileKeys * kTileKeys;
  splits = (max_context + keys - 1) / keys;
  const size_t per_row = size_t(p.shape.head_dim) + 2;
  const size_t workspace = size_t(groups) * size_t(splits) * size_t(rows) * per_row;
  if (splits <= 1 || workspace > max_workspace_floats || size_t(groups) > max_counters) return plan;
  plan.num_splits = static_cast<int>(splits);
  plan.split_keys = static_cast<int>(keys);
  plan.workspace_floats = workspace;
  plan.counters = size_t(groups);
  return plan;
}

PrefillMmaReservation MaxPrefillMmaReservation(int head_dim, int num_sms) {
  PrefillMmaReservation r;
  if (head_dim != 64 && head_dim != 128) return r;
  // groups < num_sms, and groups · splits ≤ groups · ceil(2·num_sms / groups) < 3·num_sms.
  r.workspace_floats = size_t(3) * num_sms * PrefillMmaTileRows(head_dim) * (size_t(head_dim) + 2);
  r.counters = size_t(num_sms);
  return r;
}

bool PrefillMmaServes(const PrefillAttentionParams& p) {
  // The kernel scales the row max once (max(s)·c = max(s·c) needs c > 0).
  return p.shape.scale > 0.f && std::isfinite(p.shape.scale) &&
         (p.q.dtype == DType::kBFloat16 || p.q.dtype == DType::kFloat16) &&
         (p.shape.head_dim == 64 || p.shape.head_dim == 128) &&
         (p.cache.block_size == 16 || p.cache.block_size == 32) && p.shape.num_kv_heads > 0 &&
         p.shape.num_heads % p.shape.num_kv_heads == 0;
}

absl::Status LaunchPrefillMma(const PrefillAttentionParams& p, const PrefillMmaPlan& plan,
                              float* workspace, int* counters, DeviceError* error,
                              cudaStream_t stream) {
  switch (p.q.dtype) {
    case DType::kBFloat16:
      return prefill_mma::LaunchForDType<__nv_bfloat16>(p, plan, workspace, counters, error,
                                                        stream);
    case DType::kFloat16:
      return prefill_mma::LaunchForDType<__half>(p, plan, workspace, counters, error, stream);
    default:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("PrefillMma: unsupported dtype ", DTypeName(p.q.dtype)));
}

}  // namespace kvserve::cuda
