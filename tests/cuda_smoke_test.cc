// The CUDA build path from day one: the RMSNorm kernel against the CPU
// reference. Without a GPU (or in a build without CUDA) it skips, visibly.
#include <random>

#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"
#if KVSERVE_WITH_CUDA
#include <cuda_runtime.h>

#include "kernels/cuda/device_info.h"
#include "kernels/cuda/rmsnorm.cuh"
#endif

namespace kvserve {
namespace {

TEST(CudaSmokeTest, RmsNormMatchesTheCpuReference) {
#if !KVSERVE_WITH_CUDA
  GTEST_SKIP() << "built without CUDA (KVSERVE_CUDA=OFF or no nvcc)";
#else
  if (cuda::DeviceCount() == 0) GTEST_SKIP() << "no CUDA device: " << cuda::DescribeDevice();
  constexpr int kRows = 7, kCols = 1000;
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.f, 2.f);
  std::vector<float> x(kRows * kCols), w(kCols), expected(kRows * kCols), got(kRows * kCols, NAN);
  for (float& v : x) v = normal(rng);
  for (float& v : w) v = normal(rng);
  CpuBackend cpu;
  ASSERT_TRUE(cpu.RmsNorm(Tensor(x.data(), DType::kFloat32, {kRows, kCols}),
                          Tensor(w.data(), DType::kFloat32, {kCols}), 1e-5f,
                          Tensor(expected.data(), DType::kFloat32, {kRows, kCols}))
                  .ok());
  float *dx, *dw, *dout;
  ASSERT_EQ(cudaMalloc(&dx, x.size() * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dw, w.size() * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dout, x.size() * 4), cudaSuccess);
  cudaMemcpy(dx, x.data(), x.size() * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(dw, w.data(), w.size() * 4, cudaMemcpyHostToDevice);
  cudaMemset(dout, 0xff, x.size() * 4);  // poison: NaN
  ASSERT_TRUE(cuda::LaunchRmsNorm(Tensor(), Tensor(dx, DType::kFloat32, {kRows, kCols}),
                                  Tensor(dw, DType::kFloat32, {kCols}), 1e-5f,
                                  Tensor(dout, DType::kFloat32, {kRows, kCols}), nullptr)
                  .ok());
  cudaMemcpy(got.data(), dout, got.size() * 4, cudaMemcpyDeviceToHost);
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], expected[i], 1e-4f * (1.f + std::fabs(expected[i]))) << i;
  }
  cudaFree(dx);
  cudaFree(dw);
  cudaFree(dout);
#endif
}

}  // namespace
}  // namespace kvserve
