#include "kernels/cuda/device_info.h"

#include <cuda_runtime.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace kvserve::cuda {

int DeviceCount() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no driver" error
    return 0;
  }
  return count;
}

std::string DescribeDevice() {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    cudaGetLastError();
    return absl::StrCat("no CUDA device (", cudaGetErrorString(err), ")");
  }
  if (count == 0) return "no CUDA device";
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) return "CUDA device 0 (no properties)";
  return absl::StrFormat("%s (sm_%d%d, %.1f GiB)", prop.name, prop.major, prop.minor,
                         prop.totalGlobalMem / double(1 << 30));
}

}  // namespace kvserve::cuda
