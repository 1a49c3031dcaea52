// Where the small-M GEMV's x comes from (gemv_small_m.cu): x itself, the
// MLP's SiLU·mul computed from gate_up, or the block's pre-norm computed from
// the residual. Each is rounded to the dtype exactly as the kernel it
// replaces stores it, so a fused product equals that kernel followed by the
// plain GEMV (the pre-norm up to the order of its sum of squares).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "kernels/cuda/type_convert.cuh"

namespace kvserve::cuda::gemv {

// Where a GEMV's x comes from.
enum class XKind {
  kPlain,    // x itself
  kSiluMul,  // the MLP's activation silu(gate) · up from gate_up = [gate | up] (rows 2k wide)
  kRmsNorm,  // RmsNorm(residual (+ delta)) · weight, the block's pre-norm
};

// kRmsNorm's inputs. The residual sum h = residual + delta is rounded to T
// and the normed x = (h · inv_rms) · weight rounded to T exactly as the
// one-pass RMSNorm kernel stores them (rmsnorm.cu), so the fused product is
// that kernel followed by the plain one, up to the order of the sum of
// squares. Every CTA needs the whole of h, so it computes it into shared
// memory; the residual is written back by the last CTA to finish (an atomic
// counter, reset by that CTA), when no CTA can still be reading it.
template <typename T>
struct NormArgs {
  T* residual = nullptr;     // [rows, k]; += delta (written back when delta is given)
  const T* delta = nullptr;  // [rows, k] or null: no add
  const T* weight = nullptr; // [k]
  float eps = 0.f;
  int* counter = nullptr;    // zero between launches (when delta is given)
};

// x's 16-byte vector `vec` of row m for kPlain and kSiluMul (the activation
// rounded to T exactly as LaunchSiluMul stores it, so the fused product
// equals SiluMul followed by the plain one).
template <typename T, XKind kX>
__device__ __forceinline__ uint4 LoadX(const T* __restrict__ x, int m, int k, int vec) {
  if constexpr (kX == XKind::kPlain) {
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

// kRmsNorm, first pass: h for this thread's vectors of every row into the
// shared stash ([rows][k] of T), and each row's sum of squares over the CTA
// into inv_rms[m] = 1 / rms. Plain loads (not __ldg): the residual is
// written by this kernel's last CTA.
template <typename T, int kM, int kWarps>
__device__ __forceinline__ void NormFirstPass(const NormArgs<T>& a, int rows, int k, uint4* stash,
                                              float (*ss_partial)[kM], float* inv_rms) {
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int k_vecs = k / 8;
  float ss[kM];
#pragma unroll
  for (int m = 0; m < kM; ++m) ss[m] = 0.f;
  for (int vec = tid; vec < k_vecs; vec += kWarps * 32) {
#pragma unroll
    for (int m = 0; m < kM; ++m) {
      if (m >= rows) continue;
      float h[8];
      LoadVec16(a.residual + int64_t(m) * k + vec * 8, h);
      if (a.delta != nullptr) {
        float d[8];
        LoadVec16(a.delta + int64_t(m) * k + vec * 8, d);
#pragma unroll
        for (int i = 0; i < 8; ++i) h[i] = ToFloat(FromFloat<T>(h[i] + d[i]));
      }
#pragma unroll
      for (int i = 0; i < 8; ++i) ss[m] += h[i] * h[i];
      StoreVec16(h, reinterpret_cast<T*>(stash + m * k_vecs + vec));
    }
  }
#pragma unroll
  for (int m = 0; m < kM; ++m) {
    float v = ss[m];
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
    if (lane == 0) ss_partial[warp][m] = v;
  }
  __syncthreads();
  if (tid < kM) {
    float sum = 0.f;
#pragma unroll
    for (int i = 0; i < kWarps; ++i) sum += ss_partial[i][tid];
    inv_rms[tid] = rsqrtf(sum / k + a.eps);
  }
  __syncthreads();
}

// kRmsNorm's x vector: (h · inv_rms) · weight, rounded to T.
template <typename T>
__device__ __forceinline__ uint4 NormedX(const uint4& h_raw, const float (&w)[8], float inv_rms) {
  const T* h = reinterpret_cast<const T*>(&h_raw);
  uint4 result;
  T* r = reinterpret_cast<T*>(&result);
#pragma unroll
  for (int i = 0; i < 8; ++i) r[i] = FromFloat<T>(ToFloat(h[i]) * inv_rms * w[i]);
  return result;
}

}  // namespace kvserve::cuda::gemv
