#include "kernels/cuda/self_check_util.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_resources.h"
#include "kernels/dtype.h"

namespace kvserve::cuda::self_check {

absl::StatusOr<DeviceArray> DeviceArray::Make(const SelfCheckDevice& device, DType dtype,
                                              std::initializer_list<int64_t> shape) {
  DeviceArray a;
  a.stream_ = device.stream;
  const Tensor probe(nullptr, dtype, shape);
  ASSIGN_OR_RETURN(a.buffer_, CudaBuffer::Allocate(std::max<size_t>(16, probe.bytes())));
  a.tensor_ = Tensor(a.buffer_->data(), dtype, shape);
  return a;
}

absl::Status DeviceArray::Set(const std::vector<float>& values) {
  std::vector<uint8_t> bytes(tensor_.bytes());
  RETURN_IF_ERROR(ConvertFromFloat32(values.data(), tensor_.numel(), tensor_.dtype, bytes.data()));
  return Copy(bytes.data(), bytes.size(), cudaMemcpyHostToDevice);
}

absl::Status DeviceArray::SetInts(const std::vector<int32_t>& values) {
  return Copy(const_cast<int32_t*>(values.data()), values.size() * sizeof(int32_t),
              cudaMemcpyHostToDevice);
}

absl::Status DeviceArray::Poison() {
  RETURN_IF_CUDA_ERROR(cudaMemsetAsync(tensor_.data, 0xff, tensor_.bytes(), stream_));
  return absl::OkStatus();
}

absl::Status DeviceArray::Zero() {
  RETURN_IF_CUDA_ERROR(cudaMemsetAsync(tensor_.data, 0, tensor_.bytes(), stream_));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<float>> DeviceArray::Get() const {
  std::vector<uint8_t> bytes(tensor_.bytes());
  RETURN_IF_ERROR(Copy(bytes.data(), bytes.size(), cudaMemcpyDeviceToHost));
  std::vector<float> values(tensor_.numel());
  RETURN_IF_ERROR(ConvertToFloat32(bytes.data(), tensor_.dtype, tensor_.numel(), values.data()));
  return values;
}

absl::StatusOr<std::vector<int32_t>> DeviceArray::GetInts() const {
  std::vector<int32_t> values(tensor_.numel());
  RETURN_IF_ERROR(Copy(values.data(), values.size() * sizeof(int32_t), cudaMemcpyDeviceToHost));
  return values;
}

absl::Status DeviceArray::Copy(void* host, size_t bytes, cudaMemcpyKind kind) const {
  void* dst = kind == cudaMemcpyHostToDevice ? tensor_.data : host;
  const void* src = kind == cudaMemcpyHostToDevice ? host : tensor_.data;
  RETURN_IF_CUDA_ERROR(cudaMemcpyAsync(dst, src, bytes, kind, stream_));
  RETURN_IF_CUDA_ERROR(cudaStreamSynchronize(stream_));
  return absl::OkStatus();
}

std::vector<float> Normal(std::mt19937& rng, int64_t n, float scale) {
  std::normal_distribution<float> dist(0.f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

namespace {

struct RowBound {
  double row_rel;   // ‖fast − ref‖₂ / ‖ref‖₂ per row
  double half_ulp;  // the dtype's rounding, relative
};

RowBound BoundFor(DType dtype) {
  switch (dtype) {
    case DType::kBFloat16: return {1.5e-2, 1.0 / 256};
    case DType::kFloat16: return {2e-3, 1.0 / 2048};
    default: return {1e-4, 1e-6};
  }
}

}  // namespace

absl::Status AgreeRows(absl::string_view what, const std::vector<float>& fast,
                       const std::vector<float>& ref, int64_t row_len, DType dtype) {
  const RowBound bound = BoundFor(dtype);
  const int64_t rows = static_cast<int64_t>(ref.size()) / row_len;
  for (int64_t r = 0; r < rows; ++r) {
    double ref_sq = 0, diff_sq = 0;
    for (int64_t i = r * row_len; i < (r + 1) * row_len; ++i) {
      if (!std::isfinite(fast[i])) {
        return absl::FailedPreconditionError(absl::StrFormat(
            "%s: row %d, element %d is %g (the reference: %g)", what, r, i - r * row_len, fast[i],
            ref[i]));
      }
      ref_sq += double(ref[i]) * ref[i];
      diff_sq += (double(fast[i]) - ref[i]) * (double(fast[i]) - ref[i]);
    }
    if (ref_sq == 0) {
      if (diff_sq != 0) {
        return absl::FailedPreconditionError(absl::StrFormat(
            "%s: row %d is all 0 in the reference but not in the fast kernel", what, r));
      }
      continue;
    }
    const double rel = std::sqrt(diff_sq / ref_sq);
    if (rel > bound.row_rel) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "%s: row %d of %d is %.3g away from the reference (relative L2; bound %.3g)", what, r,
          rows, rel, bound.row_rel));
    }
    const double rms = std::sqrt(ref_sq / row_len);
    for (int64_t i = r * row_len; i < (r + 1) * row_len; ++i) {
      const double allowed = 4 * bound.row_rel * rms + bound.half_ulp * std::fabs(ref[i]);
      if (std::fabs(double(fast[i]) - ref[i]) > allowed) {
        return absl::FailedPreconditionError(absl::StrFormat(
            "%s: row %d, element %d is %g where the reference gives %g (bound %.3g)", what, r,
            i - r * row_len, fast[i], ref[i], allowed));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status TakeError(const SelfCheckDevice& device, absl::string_view what, bool reference) {
  DeviceError e{};
  RETURN_IF_CUDA_ERROR(
      cudaMemcpyAsync(&e, device.error, sizeof(e), cudaMemcpyDeviceToHost, device.stream));
  RETURN_IF_CUDA_ERROR(cudaStreamSynchronize(device.stream));
  if (e.code == 0) return absl::OkStatus();
  RETURN_IF_CUDA_ERROR(cudaMemsetAsync(device.error, 0, sizeof(DeviceError), device.stream));
  RETURN_IF_CUDA_ERROR(cudaStreamSynchronize(device.stream));
  const std::string message =
      absl::StrCat(what, ": reported an error on valid inputs: ", DeviceErrorStatus(e).message());
  return reference ? absl::InternalError(message) : absl::FailedPreconditionError(message);
}

}  // namespace kvserve::cuda::self_check
