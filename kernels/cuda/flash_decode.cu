// Host side of the flash-decode kernel: which ops it serves, the split plan,
// the reservation bound, and the dtype switch. The kernels are instantiated
// in flash_decode_{bf16,f16}.cu.
#include <algorithm>
#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/flash_decode.h"
#include "kernels/cuda/flash_decode_layout.h"
#include "kernels/dtype.h"

namespace kvserve::cuda {
namespace flash_decode {
template <typename T>
absl::Status LaunchForDType(const DecodeAttentionParams&, const FlashDecodePlan&, float*, int*,
                            DeviceError*, cudaStream_t);
extern template absl::Status LaunchForDType<__nv_bfloat16>(const DecodeAttentionParams&,
                                                           const FlashDecodePlan&, float*, int*,
                                                           DeviceError*, cudaStream_t);
extern template absl::Status LaunchForDType<__half>(const DecodeAttentionParams&,
                                                    const FlashDecodePlan&, float*, int*,
                                                    DeviceError*, cudaStream_t);
template <typename T>
int ResidentCtasForDType(int head_dim, int block_size, int group_tile);
extern template int ResidentCtasForDType<__nv_bfloat16>(int, int, int);
extern template int ResidentCtasForDType<__half>(int, int, int);
}  // namespace flash_decode

namespace {

using flash_decode::GroupTile;
using flash_decode::MakeLayout;

struct Split {
  int64_t splits;
  int64_t keys;
};

// A CTA's cost beyond its keys (launch, the context, block-table and first
// K/V round trips, the partial write and the merge count), in CTA passes of
// keys. On the first H200 run one pass took ~2 µs and a CTA's fixed chain
// ~4 µs.
constexpr int64_t kCtaOverheadPasses = 2;

// Splits (before the workspace cap) for `num_seqs` sequences of at most
// `max_context` keys: the count whose estimated time is least, counting
// waves of resident CTAs, each as long as one split's keys plus the fixed
// cost. (Filling the device once by ceil(resident / CTAs) gave 512 CTAs at
// batch 32 on an H200 with 396 resident: a second, nearly empty wave.)
int64_t ChooseSplits(int64_t num_seqs, int num_kv_heads, int group_chunks, int pass_keys,
                   int64_t max_context, int num_sms, int ctas_per_sm) {
  const int64_t ctas = std::max<int64_t>(1, num_seqs * num_kv_heads * group_chunks);
  const int64_t resident = int64_t(std::max(ctas_per_sm, 1)) * std::max(num_sms, 1);
  const int64_t max_useful = (max_context + pass_keys - 1) / pass_keys;  // ≥ one pass each
  const int64_t most = std::min<int64_t>(max_useful, flash_decode::kMaxSplits);
  int64_t best = 1, best_cost = INT64_MAX;
  for (int64_t s = 1; s <= most; ++s) {
    int64_t keys = (max_context + s - 1) / s;
    keys = (keys + pass_keys - 1) / pass_keys * pass_keys;
    const int64_t used = (max_context + keys - 1) / keys;  // what rounding leaves
    const int64_t waves = (ctas * used + resident - 1) / resident;
    const int64_t cost = waves * (keys + kCtaOverheadPasses * pass_keys);
    if (cost < best_cost) {
      best_cost = cost;
      best = used;
    }
  }
  return best;
}

// Rounds the keys per split up to whole passes; the split count can only fall.
Split RoundToPasses(int64_t splits, int pass_keys, int64_t max_context) {
  int64_t keys = (max_context + splits - 1) / splits;
  keys = (keys + pass_keys - 1) / pass_keys * pass_keys;
  return {(max_context + keys - 1) / keys, keys};
}

size_t FloatsPerSplit(const AttentionShape& shape) { return size_t(shape.head_dim) + 2; }

}  // namespace

bool FlashDecodeServes(const DecodeAttentionParams& p) {
  if (p.q.dtype != DType::kBFloat16 && p.q.dtype != DType::kFloat16) return false;
  if (p.shape.num_kv_heads <= 0 || p.shape.num_heads % p.shape.num_kv_heads != 0) return false;
  if (!flash_decode::Serves(2, p.shape.head_dim, p.cache.block_size)) return false;
  const int group = p.shape.num_heads / p.shape.num_kv_heads;
  return MakeLayout(2, p.shape.head_dim, p.cache.block_size, GroupTile(group)).ok;
}

FlashDecodePlan PlanFlashDecode(const DecodeAttentionParams& p, int num_sms,
                                size_t max_workspace_floats, size_t max_counters,
                                int ctas_per_sm) {
  FlashDecodePlan plan;
  const int group = p.shape.num_heads / std::max(1, p.shape.num_kv_heads);
  plan.group_tile = GroupTile(group);
  plan.group_chunks = (group + plan.group_tile - 1) / plan.group_tile;
  const flash_decode::Layout layout =
      MakeLayout(2, p.shape.head_dim, p.cache.block_size, plan.group_tile);
  const int pass = std::max(1, layout.pass_keys);
  // The longest context the launch must cover: what the caller says, capped
  // by what the block tables can address (contexts beyond either are reported).
  const int64_t addressable = p.block_tables.dim(1) * int64_t(p.cache.block_size);
  int64_t max_context = p.max_context_len > 0 ? std::min<int64_t>(p.max_context_len, addressable)
                                              : addressable;
  max_context = std::max<int64_t>(max_context, 1);
  int64_t splits = ChooseSplits(p.num_seqs, p.shape.num_kv_heads, plan.group_chunks, pass,
                                max_context, num_sms, ctas_per_sm);
  const size_t per_split = std::max<size_t>(1, size_t(p.num_seqs) * p.shape.num_heads *
                                                   FloatsPerSplit(p.shape));
  const size_t counters = size_t(p.num_seqs) * p.shape.num_kv_heads * plan.group_chunks;
  if (counters > max_counters) splits = 1;
  const size_t fits = max_workspace_floats / per_split;
  if (fits < static_cast<size_t>(splits)) splits = std::max<int64_t>(1, static_cast<int64_t>(fits));
  const Split rounded = RoundToPasses(splits, pass, max_context);
  plan.num_splits = static_cast<int>(rounded.splits);
  plan.split_keys = static_cast<int>(rounded.keys);
  if (plan.num_splits > 1) {
    plan.workspace_floats = per_split * plan.num_splits;
    plan.counters = counters;
  }
  return plan;
}

FlashDecodeReservation MaxFlashDecodeReservation(int max_seqs, const AttentionShape& shape,
                                                 DType dtype, int block_size,
                                                 int64_t max_context, int num_sms,
                                                 int ctas_per_sm) {
  FlashDecodeReservation most;
  if (dtype != DType::kBFloat16 && dtype != DType::kFloat16) return most;
  if (shape.num_kv_heads <= 0 || !flash_decode::Serves(2, shape.head_dim, block_size)) return most;
  const int group = shape.num_heads / shape.num_kv_heads;
  const int tile = GroupTile(group), chunks = (group + tile - 1) / tile;
  const flash_decode::Layout layout = MakeLayout(2, shape.head_dim, block_size, tile);
  if (!layout.ok) return most;
  // The chosen count need not grow with the context (waves are whole), so
  // the bound takes the largest over the contexts of whole passes doubling
  // up to max_context. A context between them that plans more splits is
  // capped by PlanFlashDecode to what was reserved: as exact, a little slower.
  max_context = std::max<int64_t>(max_context, 1);
  for (int64_t b = 1; b <= max_seqs; ++b) {
    int64_t splits = 1;
    for (int64_t c = layout.pass_keys;; c = std::min(2 * c, max_context)) {
      const int64_t context = std::min(c, max_context);
      splits = std::max(splits, ChooseSplits(b, shape.num_kv_heads, chunks, layout.pass_keys,
                                             context, num_sms, ctas_per_sm));
      if (context == max_context) break;
    }
    if (splits > 1) {
      most.workspace_floats = std::max(
          most.workspace_floats, size_t(b) * shape.num_heads * FloatsPerSplit(shape) * size_t(splits));
      most.counters = std::max(most.counters, size_t(b) * shape.num_kv_heads * chunks);
    }
  }
  return most;
}

int FlashDecodeResidentCtas(DType dtype, int head_dim, int block_size, int group) {
  const int tile = GroupTile(group);
  switch (dtype) {
    case DType::kBFloat16:
      return flash_decode::ResidentCtasForDType<__nv_bfloat16>(head_dim, block_size, tile);
    case DType::kFloat16:
      return flash_decode::ResidentCtasForDType<__half>(head_dim, block_size, tile);
    default:
      return 0;
  }
}

absl::Status LaunchFlashDecode(const DecodeAttentionParams& p, const FlashDecodePlan& plan,
                               float* workspace, int* counters, DeviceError* error,
                               cudaStream_t stream) {
  switch (p.q.dtype) {
    case DType::kBFloat16:
      return flash_decode::LaunchForDType<__nv_bfloat16>(p, plan, workspace, counters, error,
                                                         stream);
    case DType::kFloat16:
      return flash_decode::LaunchForDType<__half>(p, plan, workspace, counters, error, stream);
    default:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("FlashDecode: unsupported dtype ", DTypeName(p.q.dtype)));
}

}  // namespace kvserve::cuda
