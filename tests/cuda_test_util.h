// Helpers for the CUDA tests: a backend per dtype, device tensors filled from
// host floats (rounded to the device dtype, so that the CPU reference sees
// exactly the same inputs), NaN poisoning, and the error metric
//   ‖got − want‖₂ / ‖want‖₂
// with the tolerances every CUDA test states: float32 1e-4, bfloat16 1e-2,
// float16 5e-3 (float16 keeps 3 more mantissa bits than bfloat16).
#pragma once

#include <memory>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_backend.h"
#include "kernels/tensor.h"

namespace kvserve {
/// Test names and messages show "bfloat16", not a byte dump.
inline void PrintTo(DType dtype, std::ostream* os) { *os << DTypeName(dtype); }
}  // namespace kvserve

namespace kvserve::testing {

/// A CUDA backend computing in `dtype`; null (with a test failure) if it
/// cannot be created. `fast_kernels` false: only the reference kernels.
std::unique_ptr<cuda::CudaBackend> NewCudaBackend(DType dtype = DType::kFloat32,
                                                  bool graphs = false, bool fast_kernels = true);

/// The stated tolerance of ‖got − want‖ / ‖want‖ for outputs of `dtype`.
double Tolerance(DType dtype);

/// ‖got − want‖₂ / ‖want‖₂ (or ‖got − want‖₂ when want is all zeros).
double RelativeError(const std::vector<float>& got, const std::vector<float>& want);

/// Values as `dtype` stores them (round to nearest even), back in float.
std::vector<float> RoundTo(DType dtype, std::vector<float> values);

/// `n` normal(0, scale) values rounded to `dtype`: never zeros, never reused.
std::vector<float> RandomValues(std::mt19937& rng, int64_t n, DType dtype, float scale = 1.f);

/// Owns device memory on a backend and views it as a tensor. Created
/// poisoned (all bits set: NaN in every float dtype) so that an element the
/// op fails to write shows up.
class DeviceTensor {
 public:
  DeviceTensor(Backend& backend, DType dtype, std::vector<int64_t> shape);
  Tensor tensor() const { return tensor_; }
  operator Tensor() const { return tensor_; }  // NOLINT: tests pass these as op arguments
  /// Float values converted to the tensor's dtype.
  void Set(const std::vector<float>& values);
  void SetInts(const std::vector<int32_t>& values);
  /// Sets every byte to 0xff again.
  void Poison();
  /// Synchronizes; fails the test if the backend reports an error.
  std::vector<float> Get() const;
  std::vector<int32_t> GetInts() const;

 private:
  Backend& backend_;
  DeviceBufferPtr buffer_;
  Tensor tensor_;
};

/// A float32 host tensor viewing `values`.
Tensor HostTensor(std::vector<float>& values, std::vector<int64_t> shape);
Tensor HostInts(std::vector<int32_t>& values, std::vector<int64_t> shape);

/// Whether any element is NaN (or ±inf).
bool AnyNonFinite(const std::vector<float>& values);

}  // namespace kvserve::testing
