#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/rmsnorm.cuh"
#include "kernels/cuda/pdl.cuh"
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

// The fast path. One CTA per row with the row in registers: each thread
// loads its kVecs 16-byte vectors of x (and of the residual, and of the
// weight) before using any, so a row costs one round trip to memory where
// the reference makes three dependent ones; one reduction, one barrier.
// Same arithmetic as the reference (the residual sum rounded to T first,
// then (v · inv_rms) · w), only the order of the sum of squares differs.
constexpr int kMaxFastThreads = 256;

// Sum over the CTA: each warp reduces, then every warp reads the partials
// and reduces them itself (no second barrier, no broadcast).
__device__ __forceinline__ float CtaSum(float v) {
  __shared__ float partial[kMaxFastThreads / 32];
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  v = lane < int(blockDim.x / 32) ? partial[lane] : 0.f;
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

template <typename T, bool kResidual, int kVecs>
__global__ void __launch_bounds__(kMaxFastThreads)
    RmsNormRowKernel(T* __restrict__ residual,      // [rows, n] or null
                     const T* __restrict__ x,       // [rows, n]
                     const T* __restrict__ weight,  // [n]
                     float eps, int n,
                     T* __restrict__ out) {         // [rows, n]
  constexpr int kVec = kVec16<T>;
  const int64_t base = int64_t(blockIdx.x) * n;
  float v[kVecs][kVec], r[kVecs][kVec], w[kVecs][kVec];
  // The norm's weight is constant for the step: loaded before waiting for
  // the kernel that writes x (pdl.cuh); the next kernel may start launching.
#pragma unroll
  for (int i = 0; i < kVecs; ++i) {
    const int col = (threadIdx.x + i * blockDim.x) * kVec;
    if (col < n) LoadVec16(weight + col, w[i]);
  }
  AllowDependents();
  WaitForPrimary();
#pragma unroll
  for (int i = 0; i < kVecs; ++i) {
    const int col = (threadIdx.x + i * blockDim.x) * kVec;
    if (col < n) {
      LoadVec16(x + base + col, v[i]);
      if constexpr (kResidual) LoadVec16(residual + base + col, r[i]);
    }
  }
  float sum_sq = 0.f;
#pragma unroll
  for (int i = 0; i < kVecs; ++i) {
    const int col = (threadIdx.x + i * blockDim.x) * kVec;
    if (col >= n) continue;
    if constexpr (kResidual) {
#pragma unroll
      for (int e = 0; e < kVec; ++e) v[i][e] = ToFloat(FromFloat<T>(r[i][e] + v[i][e]));
      StoreVec16(v[i], residual + base + col);  // exact: v holds T values
    }
#pragma unroll
    for (int e = 0; e < kVec; ++e) sum_sq += v[i][e] * v[i][e];
  }
  const float inv_rms = rsqrtf(CtaSum(sum_sq) / n + eps);
#pragma unroll
  for (int i = 0; i < kVecs; ++i) {
    const int col = (threadIdx.x + i * blockDim.x) * kVec;
    if (col >= n) continue;
    float o[kVec];
#pragma unroll
    for (int e = 0; e < kVec; ++e) o[e] = v[i][e] * inv_rms * w[i][e];
    StoreVec16(o, out + base + col);
  }
}

bool Aligned16(const Tensor& t) { return reinterpret_cast<uintptr_t>(t.data) % 16 == 0; }

template <typename T>
bool LaunchFast(Tensor residual, Tensor x, Tensor weight, float eps, Tensor out,
                cudaStream_t stream) {
  constexpr int kVec = kVec16<T>;
  const int rows = static_cast<int>(x.dim(0)), n = static_cast<int>(x.dim(1));
  if (n % kVec != 0 || !Aligned16(x) || !Aligned16(weight) || !Aligned16(out) ||
      (!residual.empty() && !Aligned16(residual))) {
    return false;
  }
  const int vectors = n / kVec;
  int per_thread = 1;
  while (per_thread <= 4 && vectors > per_thread * kMaxFastThreads) per_thread *= 2;
  if (per_thread > 4) return false;  // rows wider than 1024 vectors take the reference
  const int threads = ((vectors + per_thread - 1) / per_thread + 31) / 32 * 32;
  auto launch = [&](auto vecs) {
    constexpr int kVecs = decltype(vecs)::value;
    // An error of the launch is left for the caller's RETURN_IF_LAUNCH_ERROR.
    if (residual.empty()) {
      LaunchDependent(RmsNormRowKernel<T, false, kVecs>, dim3(rows), dim3(threads), 0, stream,
                      static_cast<T*>(nullptr), x.as<const T>(), weight.as<const T>(), eps, n,
                      out.as<T>());
    } else {
      LaunchDependent(RmsNormRowKernel<T, true, kVecs>, dim3(rows), dim3(threads), 0, stream,
                      residual.as<T>(), x.as<const T>(), weight.as<const T>(), eps, n,
                      out.as<T>());
    }
  };
  switch (per_thread) {
    case 1: launch(std::integral_constant<int, 1>{}); break;
    case 2: launch(std::integral_constant<int, 2>{}); break;
    default: launch(std::integral_constant<int, 4>{}); break;
  }
  return true;
}

}  // namespace

absl::Status LaunchRmsNormFast(Tensor residual, Tensor x, Tensor weight, float eps, Tensor out,
                               cudaStream_t stream) {
  if (x.dim(0) == 0) return absl::OkStatus();
  if (x.dim(1) == 0) return LaunchRmsNorm(residual, x, weight, eps, out, stream);  // no threads
  bool launched = false;
  switch (x.dtype) {
    case DType::kFloat32: launched = LaunchFast<float>(residual, x, weight, eps, out, stream); break;
    case DType::kBFloat16:
      launched = LaunchFast<__nv_bfloat16>(residual, x, weight, eps, out, stream);
      break;
    case DType::kFloat16: launched = LaunchFast<__half>(residual, x, weight, eps, out, stream); break;
    default: break;
  }
  if (!launched) return LaunchRmsNorm(residual, x, weight, eps, out, stream);
  RETURN_IF_LAUNCH_ERROR();
  return absl::OkStatus();
}

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
