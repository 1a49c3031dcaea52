// The start-up checks of the fast attention kernels (flash decode, the
// tensor-core prefill) against the reference kernels: see kernel_self_check.h.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "kernels/cuda/decode_attention.h"
#include "kernels/cuda/flash_decode.h"
#include "kernels/cuda/kernel_self_check.h"
#include "kernels/cuda/prefill_attention.h"
#include "kernels/cuda/prefill_mma.h"
#include "kernels/cuda/self_check_util.h"

namespace kvserve::cuda {
namespace {

using self_check::AgreeRows;
using self_check::DeviceArray;
using self_check::Normal;
using self_check::TakeError;

// A paged cache holding `contexts[b]` random tokens for each sequence, in
// blocks handed out in a shuffled order; every other slot (past a context,
// and two spare blocks) is NaN, so a kernel that reads one poisons its row.
struct PagedImage {
  int width = 1, blocks = 2;
  std::vector<int32_t> tables;  // [seqs, width], -1 past a sequence's blocks
  std::vector<float> k, v;      // [blocks, block_size, Hkv, D]
};

PagedImage MakePagedImage(std::mt19937& rng, const std::vector<int>& contexts, int block_size,
                          const AttentionShape& shape) {
  PagedImage image;
  for (int c : contexts) {
    image.width = std::max(image.width, (c + block_size - 1) / block_size);
    image.blocks += (c + block_size - 1) / block_size;
  }
  std::vector<int32_t> ids(image.blocks);
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);
  const int64_t row = int64_t(shape.num_kv_heads) * shape.head_dim;
  image.tables.assign(contexts.size() * size_t(image.width), -1);
  image.k.assign(size_t(image.blocks) * block_size * row, NAN);
  image.v = image.k;
  std::normal_distribution<float> normal(0.f, 1.f);
  for (size_t b = 0, next = 0; b < contexts.size(); ++b) {
    for (int i = 0; i < (contexts[b] + block_size - 1) / block_size; ++i) {
      image.tables[b * image.width + i] = ids[next++];
    }
    for (int pos = 0; pos < contexts[b]; ++pos) {
      const int64_t slot =
          int64_t(image.tables[b * image.width + pos / block_size]) * block_size + pos % block_size;
      for (int64_t e = 0; e < row; ++e) {
        image.k[slot * row + e] = normal(rng);
        image.v[slot * row + e] = normal(rng);
      }
    }
  }
  return image;
}

// The device side of an image, viewed as a PagedKvCache.
struct DeviceCache {
  DeviceArray k, v, tables;
};

absl::StatusOr<DeviceCache> Upload(const SelfCheckDevice& device, DType dtype,
                                   const PagedImage& image, int seqs, int block_size,
                                   const AttentionShape& shape) {
  ASSIGN_OR_RETURN(DeviceArray k, DeviceArray::Make(device, dtype,
                                                    {image.blocks, block_size, shape.num_kv_heads,
                                                     shape.head_dim}));
  ASSIGN_OR_RETURN(DeviceArray v, DeviceArray::Make(device, dtype,
                                                    {image.blocks, block_size, shape.num_kv_heads,
                                                     shape.head_dim}));
  ASSIGN_OR_RETURN(DeviceArray tables, DeviceArray::Make(device, DType::kInt32, {seqs, image.width}));
  RETURN_IF_ERROR(k.Set(image.k));
  RETURN_IF_ERROR(v.Set(image.v));
  RETURN_IF_ERROR(tables.SetInts(image.tables));
  return DeviceCache{std::move(k), std::move(v), std::move(tables)};
}

// Merge counters must come back as zero: graph replays and the next step
// find them as the last launch left them.
absl::Status CountersAreZero(const DeviceArray& counters, absl::string_view what) {
  ASSIGN_OR_RETURN(const std::vector<int32_t> values, counters.GetInts());
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i] != 0) {
      return absl::FailedPreconditionError(absl::StrCat(what, ": merge counter ", i, " left at ",
                                                        values[i], " (must be reset to 0)"));
    }
  }
  return absl::OkStatus();
}

std::string ShapeText(DType dtype, const AttentionShape& shape, int block_size) {
  return absl::StrCat(DTypeName(dtype), ", H ", shape.num_heads, ", Hkv ", shape.num_kv_heads,
                      ", D ", shape.head_dim, ", block ", block_size);
}

}  // namespace

absl::Status SelfCheckFlashDecode(const SelfCheckDevice& device, DType dtype,
                                  const AttentionShape& shape, int block_size) {
  // No key, one key, within one pass, several splits with a partial block.
  const std::vector<int> contexts = {0, 1, 45, 333, 2077};
  const int seqs = static_cast<int>(contexts.size());
  DecodeAttentionParams p;
  p.shape = shape;
  p.num_seqs = seqs;
  p.max_context_len = *std::max_element(contexts.begin(), contexts.end());
  p.cache.block_size = block_size;
  p.kv_written = true;
  p.q = Tensor(nullptr, dtype, {seqs, shape.num_heads, shape.head_dim});
  if (!FlashDecodeServes(p)) return absl::OkStatus();

  std::mt19937 rng(20261126);
  const PagedImage image = MakePagedImage(rng, contexts, block_size, shape);
  ASSIGN_OR_RETURN(DeviceCache cache, Upload(device, dtype, image, seqs, block_size, shape));
  ASSIGN_OR_RETURN(DeviceArray q, DeviceArray::Make(device, dtype, {seqs, shape.num_heads, shape.head_dim}));
  ASSIGN_OR_RETURN(DeviceArray kv_new,
                   DeviceArray::Make(device, dtype, {seqs, shape.num_kv_heads, shape.head_dim}));
  ASSIGN_OR_RETURN(DeviceArray out, DeviceArray::Make(device, dtype, {seqs, shape.num_heads, shape.head_dim}));
  ASSIGN_OR_RETURN(DeviceArray lens, DeviceArray::Make(device, DType::kInt32, {seqs}));
  RETURN_IF_ERROR(lens.SetInts(contexts));
  p.q = q.tensor();
  p.k = p.v = kv_new.tensor();
  p.out = out.tensor();
  p.context_lens = lens.tensor();
  p.block_tables = cache.tables.tensor();
  p.cache.k = cache.k.tensor();
  p.cache.v = cache.v.tensor();

  // The reference, with its own split workspace.
  const size_t ref_floats =
      MaxDecodeWorkspaceFloats(seqs, shape, p.max_context_len, device.num_sms);
  ASSIGN_OR_RETURN(DeviceArray ref_ws, DeviceArray::Make(device, DType::kFloat32,
                                                         {int64_t(std::max<size_t>(ref_floats, 1))}));
  auto reference = [&]() -> absl::StatusOr<std::vector<float>> {
    RETURN_IF_ERROR(out.Poison());
    const DecodePlan plan = PlanDecodeAttention(p, device.num_sms, ref_floats);
    RETURN_IF_ERROR(
        LaunchDecodeAttention(p, plan, ref_ws.data<float>(), device.error, device.stream));
    ASSIGN_OR_RETURN(std::vector<float> values, out.Get());
    RETURN_IF_ERROR(TakeError(device, "reference decode attention", /*reference=*/true));
    return values;
  };

  const FlashDecodeReservation r =
      MaxFlashDecodeReservation(seqs, shape, dtype, block_size, p.max_context_len, device.num_sms,
                                device.flash_ctas_per_sm);
  ASSIGN_OR_RETURN(DeviceArray ws, DeviceArray::Make(device, DType::kFloat32,
                                                     {int64_t(std::max<size_t>(r.workspace_floats, 1))}));
  ASSIGN_OR_RETURN(DeviceArray counters, DeviceArray::Make(device, DType::kInt32,
                                                           {int64_t(std::max<size_t>(r.counters, 1))}));
  RETURN_IF_ERROR(counters.Zero());
  const FlashDecodePlan split = PlanFlashDecode(p, device.num_sms, r.workspace_floats, r.counters,
                                                device.flash_ctas_per_sm);
  const FlashDecodePlan single = PlanFlashDecode(p, device.num_sms, 0, 0);
  auto flash = [&](const FlashDecodePlan& plan, const std::vector<float>& want,
                   absl::string_view run) -> absl::Status {
    RETURN_IF_ERROR(out.Poison());
    RETURN_IF_ERROR(ws.Poison());  // a partial the merge should not read is NaN
    RETURN_IF_ERROR(LaunchFlashDecode(p, plan, ws.data<float>(), counters.data<int>(),
                                      device.error, device.stream));
    ASSIGN_OR_RETURN(const std::vector<float> got, out.Get());
    const std::string what = absl::StrCat("flash decode (", ShapeText(dtype, shape, block_size),
                                          ", ", plan.num_splits, " splits, ", run, ")");
    RETURN_IF_ERROR(TakeError(device, what, /*reference=*/false));
    RETURN_IF_ERROR(CountersAreZero(counters, what));
    return AgreeRows(what, got, want, shape.head_dim, dtype);
  };
  RETURN_IF_ERROR(q.Set(Normal(rng, q.tensor().numel())));
  ASSIGN_OR_RETURN(const std::vector<float> want_a, reference());
  RETURN_IF_ERROR(flash(split, want_a, "first query"));
  // Another query on the same cache: a merge that read the first run's
  // partials would give the first answer.
  RETURN_IF_ERROR(q.Set(Normal(rng, q.tensor().numel())));
  ASSIGN_OR_RETURN(const std::vector<float> want_b, reference());
  RETURN_IF_ERROR(flash(split, want_b, "second query"));
  return flash(single, want_b, "one split");
}

absl::Status SelfCheckPrefillMma(const SelfCheckDevice& device, DType dtype,
                                 const AttentionShape& shape, int block_size) {
  struct Scenario {
    std::vector<int> contexts, queries;
    const char* name;
  };
  // Whole prompts (one row, a partial tile, two tiles and a bit, several
  // 128-row tiles whose last ends inside its second m-tile) and a chunk
  // whose rows sit behind earlier cached keys; then one short chunk behind a
  // long context, which the plan splits over its keys.
  const Scenario scenarios[] = {
      {{1, 67, 130, 300, 333}, {1, 67, 130, 70, 333}, "prompts and a chunk"},
      {{2500}, {21}, "a short chunk behind 2479 keys"}};
  PrefillAttentionParams probe;
  probe.shape = shape;
  probe.cache.block_size = block_size;
  probe.q = Tensor(nullptr, dtype, {1, shape.num_heads, shape.head_dim});
  if (!PrefillMmaServes(probe)) return absl::OkStatus();

  std::mt19937 rng(7);
  const PrefillMmaReservation r = MaxPrefillMmaReservation(shape.head_dim, device.num_sms);
  ASSIGN_OR_RETURN(DeviceArray ws, DeviceArray::Make(device, DType::kFloat32,
                                                     {int64_t(std::max<size_t>(r.workspace_floats, 1))}));
  ASSIGN_OR_RETURN(DeviceArray counters, DeviceArray::Make(device, DType::kInt32,
                                                           {int64_t(std::max<size_t>(r.counters, 1))}));
  RETURN_IF_ERROR(counters.Zero());
  for (const Scenario& s : scenarios) {
    const int n = static_cast<int>(s.contexts.size());
    std::vector<int32_t> cu = {0};
    for (int q : s.queries) cu.push_back(cu.back() + q);
    const int64_t tokens = cu.back();
    const PagedImage image = MakePagedImage(rng, s.contexts, block_size, shape);
    ASSIGN_OR_RETURN(DeviceCache cache, Upload(device, dtype, image, n, block_size, shape));
    ASSIGN_OR_RETURN(DeviceArray q,
                     DeviceArray::Make(device, dtype, {tokens, shape.num_heads, shape.head_dim}));
    ASSIGN_OR_RETURN(DeviceArray kv_new,
                     DeviceArray::Make(device, dtype, {tokens, shape.num_kv_heads, shape.head_dim}));
    ASSIGN_OR_RETURN(DeviceArray out,
                     DeviceArray::Make(device, dtype, {tokens, shape.num_heads, shape.head_dim}));
    ASSIGN_OR_RETURN(DeviceArray cu_dev, DeviceArray::Make(device, DType::kInt32, {n + 1}));
    ASSIGN_OR_RETURN(DeviceArray lens, DeviceArray::Make(device, DType::kInt32, {n}));
    RETURN_IF_ERROR(q.Set(Normal(rng, q.tensor().numel())));
    RETURN_IF_ERROR(cu_dev.SetInts(cu));
    RETURN_IF_ERROR(lens.SetInts(std::vector<int32_t>(s.contexts.begin(), s.contexts.end())));
    PrefillAttentionParams p = probe;
    p.num_seqs = n;
    p.q = q.tensor();
    p.k = p.v = kv_new.tensor();
    p.out = out.tensor();
    p.cu_seqlens_q = cu_dev.tensor();
    p.context_lens = lens.tensor();
    p.block_tables = cache.tables.tensor();
    p.cache.k = cache.k.tensor();
    p.cache.v = cache.v.tensor();
    p.kv_written = true;
    p.max_q_len = *std::max_element(s.queries.begin(), s.queries.end());
    p.max_context_len = *std::max_element(s.contexts.begin(), s.contexts.end());

    RETURN_IF_ERROR(out.Poison());
    RETURN_IF_ERROR(LaunchPrefillAttention(p, device.error, device.stream));
    ASSIGN_OR_RETURN(const std::vector<float> want, out.Get());
    RETURN_IF_ERROR(TakeError(device, "reference prefill attention", /*reference=*/true));

    const PrefillMmaPlan split = PlanPrefillMma(p, device.num_sms, r.workspace_floats, r.counters);
    const PrefillMmaPlan single = PlanPrefillMma(p, device.num_sms, 0, 0);
    // The split plan twice (the second finds the counters the first left),
    // and the unsplit one when the plan splits.
    std::vector<const PrefillMmaPlan*> runs = {&split, &split};
    if (split.num_splits > 1) runs.push_back(&single);
    for (const PrefillMmaPlan* plan : runs) {
      RETURN_IF_ERROR(out.Poison());
      RETURN_IF_ERROR(ws.Poison());
      RETURN_IF_ERROR(LaunchPrefillMma(p, *plan, ws.data<float>(), counters.data<int>(),
                                       device.error, device.stream));
      ASSIGN_OR_RETURN(const std::vector<float> got, out.Get());
      const std::string what =
          absl::StrCat("tensor-core prefill (", ShapeText(dtype, shape, block_size), ", ", s.name,
                       ", ", plan->num_splits, " key splits)");
      RETURN_IF_ERROR(TakeError(device, what, /*reference=*/false));
      RETURN_IF_ERROR(CountersAreZero(counters, what));
      RETURN_IF_ERROR(AgreeRows(what, got, want, shape.head_dim, dtype));
    }
  }
  return absl::OkStatus();
}

}  // namespace kvserve::cuda
