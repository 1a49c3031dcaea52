#include "kernels/cuda/gemv_small_m.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/pdl.cuh"
#include "kernels/cuda/type_convert.cuh"

namespace kvserve::cuda {
namespace {

// A CTA owns kRowsPerCta rows of W and splits K over all its threads: thread
// t reads 16-byte vectors t, t + 256, t + 512, ... of each of its rows. So
// even a narrow product (the O and down projections: 2048 rows of W) keeps
// hundreds of CTAs with every thread's loads in flight at once; the first
// version gave each warp two whole rows, and at K = 8192 each warp then
// walked eight dependent round trips with two CTAs per SM: 1.0-1.3 TB/s
// where the copy runs at 4.2 on the H200 (2026-11-27 run).
constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;

// Rows of W per CTA: every x vector a thread loads serves that many rows
// (x is re-read from L2 once per CTA), and the CTA's loads in flight per
// thread are kRowsPerCta + kM. Eight rows while the accumulators are few;
// four at M = 8 so that two CTAs of 256 threads fit an SM (≤ 128 registers).
template <int kM>
inline constexpr int kRowsPerCta = kM <= 4 ? 8 : 4;

template <typename T>
__device__ __forceinline__ float Dot8(const uint4& a, const uint4& b) {
  const T* x = reinterpret_cast<const T*>(&a);
  const T* y = reinterpret_cast<const T*>(&b);
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < 8; ++i) s = fmaf(ToFloat(x[i]), ToFloat(y[i]), s);
  return s;
}

// x · Wᵀ from the 16-byte vector `vec` of x row m: x itself, or with
// kSiluMul the MLP's activation silu(gate) · up computed from gate_up = [gate
// | up] (each row 2k wide) and rounded to T exactly as LaunchSiluMul stores
// it, so the fused product equals SiluMul followed by the plain one.
template <typename T, bool kSiluMul>
__device__ __forceinline__ uint4 LoadX(const T* __restrict__ x, int m, int k, int vec) {
  if constexpr (!kSiluMul) {
    return __ldg(reinterpret_cast<const uint4*>(x + int64_t(m) * k) + vec);
  } else {
    const T* row = x + int64_t(m) * 2 * k;
    const uint4 g_raw = __ldg(reinterpret_cast<const uint4*>(row) + vec);
    const uint4 u_raw = __ldg(reinterpret_cast<const uint4*>(row + k) + vec);
    const T* g = reinterpret_cast<const T*>(&g_raw);
    const T* u = reinterpret_cast<const T*>(&u_raw);
    uint4 result;
    T* r = reinterpret_cast<T*>(&result);
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const float gate = ToFloat(g[i]);
      r[i] = FromFloat<T>(gate / (1.f + expf(-gate)) * ToFloat(u[i]));
    }
    return result;
  }
}

template <typename T, typename TOut, int kM, bool kSiluMul>
__global__ void __launch_bounds__(kThreads, 2)
    GemvKernel(const T* __restrict__ x,         // [rows ≤ kM, k], or [rows, 2k] with kSiluMul
               const T* __restrict__ w,         // [n, k]
               const TOut* __restrict__ bias,   // [n] or null
               int rows, int n, int k,
               TOut* __restrict__ out) {        // [rows, n]
  constexpr int kR = kRowsPerCta<kM>;
  __shared__ float partial[kWarps][kR * kM];
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int row0 = blockIdx.x * kR;
  const int k_vecs = k / 8;
  float acc[kR][kM];
#pragma unroll
  for (int r = 0; r < kR; ++r) {
#pragma unroll
    for (int m = 0; m < kM; ++m) acc[r][m] = 0.f;
  }
  uint4 wv[kR];
  auto load_w = [&](int vec) {
#pragma unroll
    for (int r = 0; r < kR; ++r) {
      wv[r] = row0 + r < n && vec < k_vecs
                  ? __ldg(reinterpret_cast<const uint4*>(w + int64_t(row0 + r) * k) + vec)
                  : make_uint4(0, 0, 0, 0);
    }
  };
  // The weights are constant for the whole step: the first vectors load
  // before waiting for the kernel that writes x (pdl.cuh), which lets the
  // next kernel queue behind this one as early.
  load_w(tid);
  AllowDependents();
  WaitForPrimary();
  for (int vec = tid; vec < k_vecs; vec += kThreads) {
    // Every load of this step before any multiply.
    if (vec != tid) load_w(vec);
    uint4 xv[kM];
#pragma unroll
    for (int m = 0; m < kM; ++m) {
      xv[m] = m < rows ? LoadX<T, kSiluMul>(x, m, k, vec) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int r = 0; r < kR; ++r) {
#pragma unroll
      for (int m = 0; m < kM; ++m) acc[r][m] += Dot8<T>(wv[r], xv[m]);
    }
  }
  // Sum over the warp's lanes, then over the CTA's warps.
#pragma unroll
  for (int r = 0; r < kR; ++r) {
#pragma unroll
    for (int m = 0; m < kM; ++m) {
      float v = acc[r][m];
#pragma unroll
      for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
      if (lane == 0) partial[warp][r * kM + m] = v;
    }
  }
  __syncthreads();
  if (tid < kR * kM) {
    const int r = tid / kM, m = tid % kM;
    if (m < rows && row0 + r < n) {
      float sum = 0.f;
#pragma unroll
      for (int i = 0; i < kWarps; ++i) sum += partial[i][tid];
      const float b = bias != nullptr ? ToFloat(bias[row0 + r]) : 0.f;
      out[int64_t(m) * n + row0 + r] = FromFloat<TOut>(sum + b);
    }
  }
}

bool Aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

template <typename T, typename TOut, int kM, bool kSiluMul>
cudaError_t LaunchRows(const T* x, const T* w, const TOut* bias, int rows, int n, int k,
                       TOut* out, cudaStream_t stream) {
  const unsigned ctas = static_cast<unsigned>((n + kRowsPerCta<kM> - 1) / kRowsPerCta<kM>);
  return LaunchDependent(GemvKernel<T, TOut, kM, kSiluMul>, dim3(ctas), dim3(kThreads), 0, stream, x, w,
                  bias, rows, n, k, out);
}

template <typename T, typename TOut, bool kSiluMul>
absl::Status Launch(Tensor x, Tensor weight, Tensor bias, Tensor out, cudaStream_t stream) {
  const int rows = static_cast<int>(x.dim(0)), k = static_cast<int>(weight.dim(1));
  const int n = static_cast<int>(weight.dim(0));
  const T* xp = x.as<const T>();
  const T* wp = weight.as<const T>();
  const TOut* bp = bias.empty() ? nullptr : bias.as<const TOut>();
  TOut* op = out.as<TOut>();
  cudaError_t err;
  if (rows <= 1) {
    err = LaunchRows<T, TOut, 1, kSiluMul>(xp, wp, bp, rows, n, k, op, stream);
  } else if (rows <= 2) {
    err = LaunchRows<T, TOut, 2, kSiluMul>(xp, wp, bp, rows, n, k, op, stream);
  } else if (rows <= 4) {
    err = LaunchRows<T, TOut, 4, kSiluMul>(xp, wp, bp, rows, n, k, op, stream);
  } else {
    err = LaunchRows<T, TOut, 8, kSiluMul>(xp, wp, bp, rows, n, k, op, stream);
  }
  RETURN_IF_CUDA_ERROR(err);
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

bool GemvSiluMulServes(Tensor gate_up, Tensor weight, Tensor bias, Tensor out) {
  if (gate_up.rank != 2 || weight.rank != 2 || gate_up.dim(1) != 2 * weight.dim(1)) return false;
  // The activation's shape: what the plain kernel would be handed after SiluMul.
  const Tensor act(gate_up.data, gate_up.dtype, {gate_up.dim(0), weight.dim(1)});
  return GemvSmallMServes(act, weight, bias, out);
}

namespace {

template <bool kSiluMul>
absl::Status LaunchForDType(Tensor x, Tensor weight, Tensor bias, Tensor out,
                            cudaStream_t stream) {
  if (x.dim(0) == 0 || weight.dim(0) == 0) return absl::OkStatus();
  const bool f32_out = out.dtype == DType::kFloat32;
  if (x.dtype == DType::kBFloat16) {
    return f32_out ? Launch<__nv_bfloat16, float, kSiluMul>(x, weight, bias, out, stream)
                   : Launch<__nv_bfloat16, __nv_bfloat16, kSiluMul>(x, weight, bias, out, stream);
  }
  if (x.dtype == DType::kFloat16) {
    return f32_out ? Launch<__half, float, kSiluMul>(x, weight, bias, out, stream)
                   : Launch<__half, __half, kSiluMul>(x, weight, bias, out, stream);
  }
  return absl::InvalidArgumentError(absl::StrCat("GemvSmallM: unsupported dtype ", DTypeName(x.dtype)));
}

}  // namespace

absl::Status LaunchGemvSmallM(Tensor x, Tensor weight, Tensor bias, Tensor out,
                              cudaStream_t stream) {
  return LaunchForDType<false>(x, weight, bias, out, stream);
}

absl::Status LaunchGemvSiluMul(Tensor gate_up, Tensor weight, Tensor bias, Tensor out,
                               cudaStream_t stream) {
  return LaunchForDType<true>(gate_up, weight, bias, out, stream);
}

}  // namespace kvserve::cuda
