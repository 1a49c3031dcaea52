// The start-up checks of the small-M GEMV's fused variants against the
// kernels they replace followed by the plain GEMV (which GEMM tuning itself
// checks against cuBLASLt before it may serve): the SiLU variant (the down
// projection computing silu(gate) · up as it loads x) and the pre-norm
// variant (the block's residual add and RMSNorm computed by every CTA, the
// residual written back by the last): see kernel_self_check.h.
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/gemv_small_m.h"
#include "kernels/cuda/kernel_self_check.h"
#include "kernels/cuda/rmsnorm.cuh"
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
    RETURN_IF_ERROR(LaunchGemvSiluMul(gate_up.tensor(), weight.tensor(), Tensor(), got.tensor(),
                                      device.stream));
    ASSIGN_OR_RETURN(std::vector<float> want_rows, want.Get());
    ASSIGN_OR_RETURN(std::vector<float> got_rows, got.Get());
    RETURN_IF_ERROR(AgreeRows(absl::StrCat("SiLU GEMV (", DTypeName(dtype), ", ", rows, " rows)"),
                              got_rows, want_rows, n, dtype));
  }
  return absl::OkStatus();
}

absl::Status SelfCheckGemvRmsNorm(const SelfCheckDevice& device, DType dtype, int hidden_size) {
  if (dtype != DType::kBFloat16 && dtype != DType::kFloat16) return absl::OkStatus();
  if (hidden_size <= 0 || hidden_size % 8 != 0 || hidden_size > kGemvRmsNormMaxElems) {
    return absl::OkStatus();  // not served: nothing to check
  }
  if (device.gemv_counter == nullptr) return absl::InternalError("reference: no GEMV counter");
  std::mt19937 rng(17);
  const int64_t k = hidden_size, n = 77;
  const float eps = 1e-5f;
  ASSIGN_OR_RETURN(DeviceArray weight, DeviceArray::Make(device, dtype, {n, k}));
  ASSIGN_OR_RETURN(DeviceArray norm_weight, DeviceArray::Make(device, dtype, {k}));
  RETURN_IF_ERROR(weight.Set(Normal(rng, n * k, 0.05f)));
  RETURN_IF_ERROR(norm_weight.Set(Normal(rng, k, 0.5f)));
  for (int64_t rows = 1; rows <= kGemvRmsNormMaxRows && rows * k <= kGemvRmsNormMaxElems; ++rows) {
    ASSIGN_OR_RETURN(DeviceArray residual, DeviceArray::Make(device, dtype, {rows, k}));
    ASSIGN_OR_RETURN(DeviceArray delta, DeviceArray::Make(device, dtype, {rows, k}));
    ASSIGN_OR_RETURN(DeviceArray normed, DeviceArray::Make(device, dtype, {rows, k}));
    ASSIGN_OR_RETURN(DeviceArray want, DeviceArray::Make(device, dtype, {rows, n}));
    ASSIGN_OR_RETURN(DeviceArray got, DeviceArray::Make(device, dtype, {rows, n}));
    const std::vector<float> residual_in = Normal(rng, rows * k, 4.f);
    RETURN_IF_ERROR(delta.Set(Normal(rng, rows * k)));
    for (bool add : {false, true}) {
      const Tensor d = add ? delta.tensor() : Tensor();
      const std::string what = absl::StrCat(add ? "add + RMSNorm" : "RMSNorm", " GEMV (",
                                            DTypeName(dtype), ", ", rows, " x ", k, ")");
      // The reference: the norm kernel, then the plain GEMV.
      RETURN_IF_ERROR(residual.Set(residual_in));
      RETURN_IF_ERROR(want.Poison());
      RETURN_IF_ERROR(add ? LaunchRmsNorm(residual.tensor(), delta.tensor(), norm_weight.tensor(),
                                          eps, normed.tensor(), device.stream)
                          : LaunchRmsNorm(Tensor(), residual.tensor(), norm_weight.tensor(), eps,
                                          normed.tensor(), device.stream));
      RETURN_IF_ERROR(LaunchGemvSmallM(normed.tensor(), weight.tensor(), Tensor(), want.tensor(),
                                       device.stream));
      ASSIGN_OR_RETURN(std::vector<float> want_rows, want.Get());
      ASSIGN_OR_RETURN(std::vector<float> want_residual, residual.Get());
      // The fused kernel on the same inputs.
      RETURN_IF_ERROR(residual.Set(residual_in));
      RETURN_IF_ERROR(got.Poison());
      if (!GemvRmsNormServes(residual.tensor(), d, norm_weight.tensor(), weight.tensor(), Tensor(),
                             got.tensor())) {
        return absl::InternalError("reference: the pre-norm GEMV refuses its own check's shape");
      }
      RETURN_IF_ERROR(LaunchGemvRmsNorm(residual.tensor(), d, norm_weight.tensor(), eps,
                                        device.gemv_counter, weight.tensor(), Tensor(),
                                        got.tensor(), device.stream));
      ASSIGN_OR_RETURN(std::vector<float> got_rows, got.Get());
      ASSIGN_OR_RETURN(std::vector<float> got_residual, residual.Get());
      RETURN_IF_ERROR(AgreeRows(what, got_rows, want_rows, n, dtype));
      RETURN_IF_ERROR(
          AgreeRows(absl::StrCat(what, ", residual"), got_residual, want_residual, k, dtype));
      int counter = -1;
      if (cudaMemcpyAsync(&counter, device.gemv_counter, sizeof(int), cudaMemcpyDeviceToHost,
                          device.stream) != cudaSuccess ||
          cudaStreamSynchronize(device.stream) != cudaSuccess) {
        return absl::InternalError("reference: reading the GEMV counter back failed");
      }
      if (counter != 0) {
        return absl::FailedPreconditionError(
            absl::StrCat(what, ": the counter was left at ", counter, ", not 0"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace kvserve::cuda
