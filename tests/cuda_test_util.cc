#include "tests/cuda_test_util.h"

#include <cmath>
#include <cstring>

#include "gtest/gtest.h"

namespace kvserve::testing {
namespace {

Tensor MakeTensor(void* data, DType dtype, const std::vector<int64_t>& shape) {
  Tensor t;
  t.data = data;
  t.dtype = dtype;
  t.rank = static_cast<int>(shape.size());
  for (int i = 0; i < t.rank; ++i) t.dims[i] = shape[i];
  return t;
}

}  // namespace

std::unique_ptr<cuda::CudaBackend> NewCudaBackend(DType dtype, bool graphs, bool fast_kernels) {
  cuda::CudaBackendOptions options;
  options.dtype = dtype;
  options.graphs = graphs;
  options.fast_kernels = fast_kernels ? cuda::FastKernels::All() : cuda::FastKernels::None();
  // Programmatic launch is one switch for the process (pdl.h): a reference
  // backend made beside a fast one must not turn it off for both. (It only
  // reaches the kernels both share, which wait for their predecessor first.)
  options.fast_kernels.pdl = true;
  auto backend = cuda::CudaBackend::Create(options);
  EXPECT_TRUE(backend.ok()) << backend.status();
  return backend.ok() ? *std::move(backend) : nullptr;
}

double Tolerance(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return 1e-4;
    case DType::kBFloat16: return 1e-2;
    case DType::kFloat16: return 5e-3;
    default: return 0;
  }
}

double RelativeError(const std::vector<float>& got, const std::vector<float>& want) {
  EXPECT_EQ(got.size(), want.size());
  double diff = 0, norm = 0;
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    diff += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
    norm += double(want[i]) * want[i];
  }
  return norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
}

std::vector<float> RoundTo(DType dtype, std::vector<float> values) {
  if (dtype == DType::kFloat32) return values;
  std::vector<uint16_t> stored(values.size());
  EXPECT_TRUE(ConvertFromFloat32(values.data(), values.size(), dtype, stored.data()).ok());
  EXPECT_TRUE(ConvertToFloat32(stored.data(), dtype, stored.size(), values.data()).ok());
  return values;
}

std::vector<float> RandomValues(std::mt19937& rng, int64_t n, DType dtype, float scale) {
  std::normal_distribution<float> normal(0.f, scale);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) {
    do {
      x = normal(rng);
    } while (x == 0.f);
  }
  return RoundTo(dtype, std::move(v));
}

DeviceTensor::DeviceTensor(Backend& backend, DType dtype, std::vector<int64_t> shape)
    : backend_(backend) {
  Tensor probe = MakeTensor(nullptr, dtype, shape);
  auto buffer = backend.Allocate(probe.bytes());
  EXPECT_TRUE(buffer.ok()) << buffer.status();
  if (!buffer.ok()) return;
  buffer_ = *std::move(buffer);
  tensor_ = MakeTensor(buffer_->data(), dtype, shape);
  Poison();
}

void DeviceTensor::Poison() {
  std::vector<unsigned char> ones(tensor_.bytes(), 0xff);
  EXPECT_TRUE(backend_.CopyToDevice(ones.data(), ones.size(), tensor_.data).ok());
}

void DeviceTensor::Set(const std::vector<float>& values) {
  ASSERT_EQ(static_cast<int64_t>(values.size()), tensor_.numel());
  absl::Status s = backend_.Upload(values.data(), DType::kFloat32, tensor_);
  ASSERT_TRUE(s.ok()) << s;
}

void DeviceTensor::SetInts(const std::vector<int32_t>& values) {
  ASSERT_EQ(static_cast<int64_t>(values.size()), tensor_.numel());
  ASSERT_EQ(tensor_.dtype, DType::kInt32);
  absl::Status s = backend_.CopyToDevice(values.data(), values.size() * sizeof(int32_t), tensor_.data);
  ASSERT_TRUE(s.ok()) << s;
}

std::vector<float> DeviceTensor::Get() const {
  std::vector<unsigned char> raw(tensor_.bytes());
  absl::Status s = backend_.CopyToHost(tensor_.data, raw.size(), raw.data());
  EXPECT_TRUE(s.ok()) << s;
  std::vector<float> out(static_cast<size_t>(tensor_.numel()));
  EXPECT_TRUE(ConvertToFloat32(raw.data(), tensor_.dtype, tensor_.numel(), out.data()).ok());
  return out;
}

std::vector<int32_t> DeviceTensor::GetInts() const {
  std::vector<int32_t> out(static_cast<size_t>(tensor_.numel()));
  absl::Status s = backend_.CopyToHost(tensor_.data, out.size() * sizeof(int32_t), out.data());
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

Tensor HostTensor(std::vector<float>& values, std::vector<int64_t> shape) {
  return MakeTensor(values.data(), DType::kFloat32, shape);
}

Tensor HostInts(std::vector<int32_t>& values, std::vector<int64_t> shape) {
  return MakeTensor(values.data(), DType::kInt32, shape);
}

bool AnyNonFinite(const std::vector<float>& values) {
  for (float v : values) {
    if (!std::isfinite(v)) return true;
  }
  return false;
}

}  // namespace kvserve::testing
