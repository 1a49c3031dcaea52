#include "tests/bench/cuda_bench_util.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

namespace kvserve::bench {

double MeasureCopyBandwidth() {
  constexpr size_t kBytes = size_t(1) << 30;
  void *a = nullptr, *b = nullptr;
  if (cudaMalloc(&a, kBytes) != cudaSuccess || cudaMalloc(&b, kBytes) != cudaSuccess) {
    cudaFree(a);
    return 0;
  }
  cudaMemset(a, 1, kBytes);
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  std::vector<float> ms;
  for (int i = 0; i < 13; ++i) {
    cudaEventRecord(start);
    cudaMemcpyAsync(b, a, kBytes, cudaMemcpyDeviceToDevice);
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    float t = 0;
    cudaEventElapsedTime(&t, start, stop);
    if (i >= 3) ms.push_back(t);  // the first runs warm up
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaFree(a);
  cudaFree(b);
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2] > 0 ? 2.0 * kBytes / (ms[ms.size() / 2] * 1e-3) : 0;
}

}  // namespace kvserve::bench
