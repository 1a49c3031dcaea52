// The start-up check of the fused SiLU GEMV (the down projection's small-M
// kernel computing silu(gate) · up as it loads x) against SiluMul followed
// by the plain small-M kernel, which GEMM tuning itself checks against
// cuBLASLt before it may serve: see kernel_self_check.h.
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/gemv_small_m.h"
#include "kernels/cuda/kernel_self_check.h"
#include "kernels/cuda/self_check_util.h"

namespace kvserve::cuda {

using self_check::AgreeRows;
using self_check::DeviceArray;
using self_check::Normal;

absl::Status SelfCheckGemvSiluMul(const SelfCheckDevice& device, DType dtype) {
  if (dtype != DType::kBFloat16 && dtype != DType::kFloat16) return absl::OkStatus();
  std::mt19937 rng(13);
  // K not a multiple of the CTA's 256 vectors, N not of its rows; every row count.
  const int64_t n = 77, k = 8 * 300;
  ASSIGN_OR_RETURN(DeviceArray weight, DeviceArray::Make(device, dtype, {n, k}));
  RETURN_IF_ERROR(weight.Set(Normal(rng, n * k, 0.05f)));
  for (int64_t rows = 1; rows <= kGemvMaxRows; ++rows) {
    ASSIGN_OR_RETURN(DeviceArray gate_up, DeviceArray::Make(device, dtype, {rows, 2 * k}));
    ASSIGN_OR_RETURN(DeviceArray act, DeviceArray::Make(device, dtype, {rows, k}));
    ASSIGN_OR_RETURN(DeviceArray want, DeviceArray::Make(device, dtype, {rows, n}));
    ASSIGN_OR_RETURN(DeviceArray got, DeviceArray::Make(device, dtype, {rows, n}));
    RETURN_IF_ERROR(gate_up.Set(Normal(rng, rows * 2 * k, 2.f)));
    RETURN_IF_ERROR(want.Poison());
    RETURN_IF_ERROR(got.Poison());
    if (!GemvSiluMulServes(gate_up.tensor(), weight.tensor(), Tensor(), got.tensor())) {
      return absl::InternalError("reference: the fused SiLU GEMV refuses its own check's shape");
    }
    RETURN_IF_ERROR(LaunchSiluMul(gate_up.tensor(), act.tensor(), device.stream));
    RETURN_IF_ERROR(
        LaunchGemvSmallM(act.tensor(), weight.tensor(), Tensor(), want.tensor(), device.stream));
    RETURN_IF_ERROR(
        LaunchGemvSiluMul(gate_up.tensor(), weight.tensor(), Tensor(), got.tensor(), device.stream));
    ASSIGN_OR_RETURN(std::vector<float> want_rows, want.Get());
    ASSIGN_OR_RETURN(std::vector<float> got_rows, got.Get());
    RETURN_IF_ERROR(AgreeRows(absl::StrCat("SiLU GEMV (", DTypeName(dtype), ", ", rows, " rows)"),
                              got_rows, want_rows, n, dtype));
  }
  return absl::OkStatus();
}

}  // namespace kvserve::cuda
