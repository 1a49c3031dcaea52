// What the start-up checks of the fast kernels share (kernel_self_check.h):
// device arrays filled from host floats, poisoned with NaN, read back; the
// row-wise agreement test; the device error word after a run.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <initializer_list>
#include <random>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kernels/cuda/kernel_self_check.h"
#include "kernels/device_buffer.h"
#include "kernels/tensor.h"

namespace kvserve::cuda::self_check {

/// Device memory viewed as a tensor; copies are synchronous on the checks'
/// stream (start-up: waiting is fine).
class DeviceArray {
 public:
  static absl::StatusOr<DeviceArray> Make(const SelfCheckDevice& device, DType dtype,
                                          std::initializer_list<int64_t> shape);
  Tensor tensor() const { return tensor_; }
  template <typename T>
  T* data() const {
    return static_cast<T*>(tensor_.data);
  }
  /// Float values converted to the dtype (NaN stays NaN).
  absl::Status Set(const std::vector<float>& values);
  absl::Status SetInts(const std::vector<int32_t>& values);
  /// Every bit set: NaN in each float dtype, so an unwritten or stale element shows.
  absl::Status Poison();
  absl::Status Zero();
  absl::StatusOr<std::vector<float>> Get() const;
  absl::StatusOr<std::vector<int32_t>> GetInts() const;

 private:
  absl::Status Copy(void* host, size_t bytes, cudaMemcpyKind kind) const;

  cudaStream_t stream_ = nullptr;
  DeviceBufferPtr buffer_;
  Tensor tensor_;
};

/// `n` normal(0, scale) values.
std::vector<float> Normal(std::mt19937& rng, int64_t n, float scale = 1.f);

/// FailedPrecondition naming the worst row unless every row of `row_len`
/// values of `fast` is close to the reference's: no NaN or inf, the row's
/// ‖fast − ref‖₂ / ‖ref‖₂ within the dtype's bound (bf16 1.5e-2, f16 2e-3,
/// f32 1e-4; a correct kernel measures ≤ 3e-3 in bf16), each element within
/// 4 × that bound × the row's rms plus half an ulp of the dtype × |ref|, and a
/// row that is exactly 0 in the reference (no key at all) exactly 0 too.
/// A bound per element alone (atol + rtol·|ref|) passed a merge that drops
/// one split in 33 (a 12% row error) where the rows are small.
absl::Status AgreeRows(absl::string_view what, const std::vector<float>& fast,
                       const std::vector<float>& ref, int64_t row_len, DType dtype);

/// The device error word after a run. A fast kernel that reports an error on
/// valid inputs is wrong (FailedPrecondition: fall back); a reference that
/// does means the check itself is broken (Internal: start-up fails).
absl::Status TakeError(const SelfCheckDevice& device, absl::string_view what, bool reference);

}  // namespace kvserve::cuda::self_check
