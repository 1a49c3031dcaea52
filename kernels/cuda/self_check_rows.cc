// The start-up checks of the fast row kernels (one-pass RMSNorm, RoPE with
// the KV-cache write) against their references: see kernel_self_check.h.
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "kernels/cuda/kernel_self_check.h"
#include "kernels/cuda/rmsnorm.cuh"
#include "kernels/cuda/rope_split.h"
#include "kernels/cuda/self_check_util.h"

namespace kvserve::cuda {

using self_check::AgreeRows;
using self_check::DeviceArray;
using self_check::Normal;
using self_check::TakeError;

absl::Status SelfCheckRmsNorm(const SelfCheckDevice& device, DType dtype, int hidden_size) {
  if (hidden_size <= 0) return absl::OkStatus();
  std::mt19937 rng(11);
  const int rows = 3;
  ASSIGN_OR_RETURN(DeviceArray x, DeviceArray::Make(device, dtype, {rows, hidden_size}));
  ASSIGN_OR_RETURN(DeviceArray weight, DeviceArray::Make(device, dtype, {hidden_size}));
  ASSIGN_OR_RETURN(DeviceArray residual, DeviceArray::Make(device, dtype, {rows, hidden_size}));
  ASSIGN_OR_RETURN(DeviceArray out, DeviceArray::Make(device, dtype, {rows, hidden_size}));
  RETURN_IF_ERROR(x.Set(Normal(rng, int64_t(rows) * hidden_size)));
  RETURN_IF_ERROR(weight.Set(Normal(rng, hidden_size, 0.5f)));
  const std::vector<float> residual_in = Normal(rng, int64_t(rows) * hidden_size, 4.f);
  for (bool with_residual : {false, true}) {
    std::vector<float> want_out, want_residual;
    for (bool fast : {false, true}) {
      RETURN_IF_ERROR(residual.Set(residual_in));
      RETURN_IF_ERROR(out.Poison());
      const Tensor r = with_residual ? residual.tensor() : Tensor();
      if (fast) {
        RETURN_IF_ERROR(LaunchRmsNormFast(r, x.tensor(), weight.tensor(), 1e-5f, out.tensor(),
                                          device.stream));
      } else {
        RETURN_IF_ERROR(
            LaunchRmsNorm(r, x.tensor(), weight.tensor(), 1e-5f, out.tensor(), device.stream));
      }
      ASSIGN_OR_RETURN(std::vector<float> got, out.Get());
      ASSIGN_OR_RETURN(std::vector<float> got_residual, residual.Get());
      if (!fast) {
        want_out = std::move(got);
        want_residual = std::move(got_residual);
        continue;
      }
      const std::string what = absl::StrCat(with_residual ? "add + RMSNorm" : "RMSNorm", " (",
                                            DTypeName(dtype), ", ", hidden_size, " wide)");
      RETURN_IF_ERROR(AgreeRows(what, got, want_out, hidden_size, dtype));
      RETURN_IF_ERROR(AgreeRows(absl::StrCat(what, ", residual"), got_residual, want_residual,
                                hidden_size, dtype));
    }
  }
  return absl::OkStatus();
}

absl::Status SelfCheckRopeKvWrite(const SelfCheckDevice& device, DType dtype,
                                  const AttentionShape& shape, int block_size) {
  std::mt19937 rng(5);
  const int tokens = 4, max_pos = 1024, blocks = 4;
  const int h = shape.num_heads, hkv = shape.num_kv_heads, d = shape.head_dim;
  const std::vector<int32_t> positions = {0, 7, 300, 1023};
  // A padded row (no write) among real slots.
  const std::vector<int32_t> slots = {3, kPadSlot, block_size + 5, 4 * block_size - 1};
  std::vector<float> table(int64_t(max_pos) * d);
  for (int pos = 0; pos < max_pos; ++pos) {
    for (int i = 0; i < d / 2; ++i) {
      const double angle = pos * std::pow(10000.0, -2.0 * i / d);
      table[int64_t(pos) * d + i] = static_cast<float>(std::cos(angle));
      table[int64_t(pos) * d + d / 2 + i] = static_cast<float>(std::sin(angle));
    }
  }
  ASSIGN_OR_RETURN(DeviceArray qkv, DeviceArray::Make(device, dtype, {tokens, int64_t(h + 2 * hkv) * d}));
  ASSIGN_OR_RETURN(DeviceArray pos, DeviceArray::Make(device, DType::kInt32, {tokens}));
  ASSIGN_OR_RETURN(DeviceArray cos_sin, DeviceArray::Make(device, DType::kFloat32, {max_pos, d}));
  ASSIGN_OR_RETURN(DeviceArray slot, DeviceArray::Make(device, DType::kInt32, {tokens}));
  ASSIGN_OR_RETURN(DeviceArray q, DeviceArray::Make(device, dtype, {tokens, h, d}));
  ASSIGN_OR_RETURN(DeviceArray k, DeviceArray::Make(device, dtype, {tokens, hkv, d}));
  ASSIGN_OR_RETURN(DeviceArray v, DeviceArray::Make(device, dtype, {tokens, hkv, d}));
  ASSIGN_OR_RETURN(DeviceArray ck, DeviceArray::Make(device, dtype, {blocks, block_size, hkv, d}));
  ASSIGN_OR_RETURN(DeviceArray cv, DeviceArray::Make(device, dtype, {blocks, block_size, hkv, d}));
  RETURN_IF_ERROR(qkv.Set(Normal(rng, qkv.tensor().numel())));
  RETURN_IF_ERROR(pos.SetInts(positions));
  RETURN_IF_ERROR(cos_sin.Set(table));
  RETURN_IF_ERROR(slot.SetInts(slots));
  const std::vector<float> cache_in = Normal(rng, ck.tensor().numel());
  RopeSplitParams p;
  p.qkv = qkv.tensor();
  p.positions = pos.tensor();
  p.cos_sin = cos_sin.tensor();
  p.q_out = q.tensor();
  p.k_out = k.tensor();
  p.v_out = v.tensor();
  p.shape = shape;
  p.slot_mapping = slot.tensor();
  p.cache = PagedKvCache{ck.tensor(), cv.tensor(), block_size};
  std::vector<std::vector<float>> want;
  for (bool fast : {false, true}) {
    for (DeviceArray* a : {&q, &k, &v}) RETURN_IF_ERROR(a->Poison());
    RETURN_IF_ERROR(ck.Set(cache_in));
    RETURN_IF_ERROR(cv.Set(cache_in));
    if (fast) {
      RETURN_IF_ERROR(LaunchRopeSplitKvWrite(p, device.error, device.stream));
    } else {
      RETURN_IF_ERROR(LaunchRopeSplit(p, device.error, device.stream));
    }
    std::vector<std::vector<float>> got;
    for (DeviceArray* a : {&q, &k, &v, &ck, &cv}) {
      ASSIGN_OR_RETURN(std::vector<float> values, a->Get());
      got.push_back(std::move(values));
    }
    const std::string what = absl::StrCat("RoPE + KV-cache write (", DTypeName(dtype), ", H ", h,
                                          ", Hkv ", hkv, ", D ", d, ", block ", block_size, ")");
    RETURN_IF_ERROR(TakeError(device, fast ? what : "reference RoPE", /*reference=*/!fast));
    if (!fast) {
      want = std::move(got);
      continue;
    }
    // Per head row; the cache's untouched slots must come back bit for bit.
    const char* parts[] = {"q", "k", "v", "K cache", "V cache"};
    for (int i = 0; i < 5; ++i) {
      RETURN_IF_ERROR(AgreeRows(absl::StrCat(what, ", ", parts[i]), got[i], want[i], d, dtype));
    }
  }
  return absl::OkStatus();
}

}  // namespace kvserve::cuda
