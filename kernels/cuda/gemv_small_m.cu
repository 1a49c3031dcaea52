#include "kernels/cuda/gemv_small_m.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/type_convert.cuh"

namespace kvserve::cuda {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kRowsPerWarp = 2;  // rows of W per warp: two reads in flight per x read

// 16-byte chunks of K each lane has in flight per row: fewer when there
// are many x rows (their vectors take registers too).
template <int kM>
inline constexpr int kUnroll = kM <= 2 ? 4 : 2;

template <typename T>
__device__ __forceinline__ float Dot8(const uint4& a, const uint4& b) {
  const T* x = reinterpret_cast<const T*>(&a);
  const T* y = reinterpret_cast<const T*>(&b);
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < 8; ++i) s = fmaf(ToFloat(x[i]), ToFloat(y[i]), s);
  return s;
}

// One warp per kRowsPerWarp rows of W; lanes stride over K in 16-byte vectors.
template <typename T, typename TOut, int kM>
__global__ void __launch_bounds__(kThreads)
    GemvKernel(const T* __restrict__ x,         // [rows ≤ kM, k]
               const T* __restrict__ w,         // [n, k]
               const TOut* __restrict__ bias,   // [n] or null
               int rows, int n, int k,
               TOut* __restrict__ out) {        // [rows, n]
  constexpr int kU = kUnroll<kM>;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int row0 = (blockIdx.x * kWarps + warp) * kRowsPerWarp;
  if (row0 >= n) return;  // whole warps only: no barrier below
  const int k_vecs = k / 8;
  float acc[kRowsPerWarp][kM];
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
#pragma unroll
    for (int m = 0; m < kM; ++m) acc[r][m] = 0.f;
  }
  for (int v0 = 0; v0 < k_vecs; v0 += 32 * kU) {
    uint4 wv[kU][kRowsPerWarp], xv[kU][kM];
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const int vec = v0 + u * 32 + lane;
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r) {
        wv[u][r] = vec < k_vecs && row0 + r < n
                       ? __ldg(reinterpret_cast<const uint4*>(w + int64_t(row0 + r) * k) + vec)
                       : make_uint4(0, 0, 0, 0);
      }
#pragma unroll
      for (int m = 0; m < kM; ++m) {
        xv[u][m] = vec < k_vecs && m < rows
                       ? __ldg(reinterpret_cast<const uint4*>(x + int64_t(m) * k) + vec)
                       : make_uint4(0, 0, 0, 0);
      }
    }
#pragma unroll
    for (int u = 0; u < kU; ++u) {
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r) {
#pragma unroll
        for (int m = 0; m < kM; ++m) acc[r][m] += Dot8<T>(wv[u][r], xv[u][m]);
      }
    }
  }
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
#pragma unroll
    for (int m = 0; m < kM; ++m) {
#pragma unroll
      for (int offset = 16; offset > 0; offset >>= 1) {
        acc[r][m] += __shfl_xor_sync(0xffffffffu, acc[r][m], offset);
      }
    }
  }
  // Every lane holds every sum; lane r·kM + m writes (row0 + r, m).
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
#pragma unroll
    for (int m = 0; m < kM; ++m) {
      if (lane == r * kM + m && m < rows && row0 + r < n) {
        const float b = bias != nullptr ? ToFloat(bias[row0 + r]) : 0.f;
        out[int64_t(m) * n + row0 + r] = FromFloat<TOut>(acc[r][m] + b);
      }
    }
  }
}

bool Aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

template <typename T, typename TOut>
absl::Status Launch(Tensor x, Tensor weight, Tensor bias, Tensor out, cudaStream_t stream) {
  const int rows = static_cast<int>(x.dim(0)), k = static_cast<int>(x.dim(1));
  const int n = static_cast<int>(weight.dim(0));
  const unsigned ctas = static_cast<unsigned>((n + kWarps * kRowsPerWarp - 1) / (kWarps * kRowsPerWarp));
  const T* xp = x.as<const T>();
  const T* wp = weight.as<const T>();
  const TOut* bp = bias.empty() ? nullptr : bias.as<const TOut>();
  TOut* op = out.as<TOut>();
  if (rows <= 1) {
    GemvKernel<T, TOut, 1><<<ctas, kThreads, 0, stream>>>(xp, wp, bp, rows, n, k, op);
  } else if (rows <= 2) {
    GemvKernel<T, TOut, 2><<<ctas, kThreads, 0, stream>>>(xp, wp, bp, rows, n, k, op);
  } else if (rows <= 4) {
    GemvKernel<T, TOut, 4><<<ctas, kThreads, 0, stream>>>(xp, wp, bp, rows, n, k, op);
  } else {
    GemvKernel<T, TOut, 8><<<ctas, kThreads, 0, stream>>>(xp, wp, bp, rows, n, k, op);
  }
  RETURN_IF_LAUNCH_ERROR();
  return absl::OkStatus();
}

}  // namespace

bool GemvSmallMServes(Tensor x, Tensor weight, Tensor bias, Tensor out) {
  const bool half = x.dtype == DType::kBFloat16 || x.dtype == DType::kFloat16;
  return half && weight.dtype == x.dtype && x.rank == 2 && weight.rank == 2 &&
         x.dim(0) >= 1 && x.dim(0) <= kGemvMaxRows && x.dim(1) % 8 == 0 &&
         weight.dim(1) == x.dim(1) && Aligned16(x.data) && Aligned16(weight.data) &&
         (out.dtype == x.dtype || out.dtype == DType::kFloat32) &&
         (bias.empty() || bias.dtype == out.dtype);
}

absl::Status LaunchGemvSmallM(Tensor x, Tensor weight, Tensor bias, Tensor out,
                              cudaStream_t stream) {
  if (x.dim(0) == 0 || weight.dim(0) == 0) return absl::OkStatus();
  const bool f32_out = out.dtype == DType::kFloat32;
  if (x.dtype == DType::kBFloat16) {
    return f32_out ? Launch<__nv_bfloat16, float>(x, weight, bias, out, stream)
                   : Launch<__nv_bfloat16, __nv_bfloat16>(x, weight, bias, out, stream);
  }
  if (x.dtype == DType::kFloat16) {
    return f32_out ? Launch<__half, float>(x, weight, bias, out, stream)
                   : Launch<__half, __half>(x, weight, bias, out, stream);
  }
  return absl::InvalidArgumentError(absl::StrCat("GemvSmallM: unsupported dtype ", DTypeName(x.dtype)));
}

}  // namespace kvserve::cuda
