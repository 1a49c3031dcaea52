#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/rmsnorm.cuh"
#include "kernels/cuda/type_convert.cuh"

namespace kvserve::cuda {
namespace {

constexpr int kThreads = 256;

// Block-wide sum through warp shuffles and one shared array.
__device__ float BlockSum(float v) {
  __shared__ float partial[kThreads / 32];
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  v = lane < kThreads / 32 ? partial[lane] : 0.f;
  if (warp == 0) {
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
    if (lane == 0) partial[0] = v;
  }
  __syncthreads();
  const float total = partial[0];
  __syncthreads();
  return total;
}

// One block per row. With kResidual, residual += x (stored rounded to T, as the
// next layer reads it) and the sum is normalized.
template <typename T, bool kResidual>
__global__ void RmsNormKernel(T* __restrict__ residual,      // [rows, n] or null
                              const T* __restrict__ x,       // [rows, n]
                              const T* __restrict__ weight,  // [n]
                              float eps, int n,
                              T* __restrict__ out) {         // [rows, n]
  const int64_t row = blockIdx.x;
  const T* xr = x + row * n;
  T* rr = kResidual ? residual + row * n : nullptr;
  float sum_sq = 0.f;
  for (int i = threadIdx.x; i < n; i += kThreads) {
    float v = ToFloat(xr[i]);
    if constexpr (kResidual) {
      const T stored = FromFloat<T>(ToFloat(rr[i]) + v);
      rr[i] = stored;
      v = ToFloat(stored);
    }
    sum_sq += v * v;
  }
  const float inv_rms = rsqrtf(BlockSum(sum_sq) / n + eps);
  const T* src = kResidual ? rr : xr;
  T* o = out + row * n;
  for (int i = threadIdx.x; i < n; i += kThreads) {
    o[i] = FromFloat<T>(ToFloat(src[i]) * inv_rms * ToFloat(weight[i]));
  }
}

template <typename T>
void Launch(Tensor residual, Tensor x, Tensor weight, float eps, Tensor out, cudaStream_t stream) {
  const int rows = static_cast<int>(x.dim(0)), n = static_cast<int>(x.dim(1));
  if (rows == 0) return;
  if (residual.empty()) {
    RmsNormKernel<T, false><<<rows, kThreads, 0, stream>>>(nullptr, x.as<T>(), weight.as<T>(), eps,
                                                           n, out.as<T>());
  } else {
    RmsNormKernel<T, true><<<rows, kThreads, 0, stream>>>(residual.as<T>(), x.as<T>(),
                                                          weight.as<T>(), eps, n, out.as<T>());
  }
}

}  // namespace

absl::Status LaunchRmsNorm(Tensor residual, Tensor x, Tensor weight, float eps, Tensor out,
                           cudaStream_t stream) {
  switch (x.dtype) {
    case DType::kFloat32: Launch<float>(residual, x, weight, eps, out, stream); break;
    case DType::kBFloat16: Launch<__nv_bfloat16>(residual, x, weight, eps, out, stream); break;
    case DType::kFloat16: Launch<__half>(residual, x, weight, eps, out, stream); break;
    default:
      return absl::InvalidArgumentError(absl::StrCat("RmsNorm: unsupported dtype ", DTypeName(x.dtype)));
  }
  RETURN_IF_LAUNCH_ERROR();
  return absl::OkStatus();
}

}  // namespace kvserve::cuda
