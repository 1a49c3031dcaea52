#include "kernels/cuda/gemv_small_m.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/gemv_inputs.cuh"
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

// Vectors per row a thread loads per step: two where K holds more than one
// per thread and the accumulators are few (M ≤ 2); else one, which keeps
// the registers at 80 and 3 CTAs per SM for the K = 2048 products.
template <int kM>
inline constexpr int kMaxSteps = kM <= 2 ? 2 : 1;

template <typename T>
__device__ __forceinline__ float Dot8(const uint4& a, const uint4& b) {
  const T* x = reinterpret_cast<const T*>(&a);
  const T* y = reinterpret_cast<const T*>(&b);
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < 8; ++i) s = fmaf(ToFloat(x[i]), ToFloat(y[i]), s);
  return s;
}

using gemv::LoadX;
using gemv::NormArgs;
using gemv::NormedX;
using gemv::NormFirstPass;
using gemv::XKind;

template <typename T, typename TOut, int kM, XKind kX, int kU>
__global__ void __launch_bounds__(kThreads, 2)
    GemvKernel(const T* __restrict__ x,         // [rows ≤ kM, k]; [rows, 2k] (kSiluMul); unused (kRmsNorm)
               const T* __restrict__ w,         // [n, k]
               const TOut* __restrict__ bias,   // [n] or null
               int rows, int n, int k,
               TOut* __restrict__ out,          // [rows, n]
               const NormArgs<T> norm) {        // kRmsNorm only
  constexpr int kR = kRowsPerCta<kM>;
  __shared__ float partial[kWarps][kR * kM];
  extern __shared__ uint4 stash[];  // kRmsNorm: h, [rows][k / 8] vectors
  __shared__ float ss_partial[kWarps][kM];
  __shared__ float inv_rms[kM];
  __shared__ int last;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int row0 = blockIdx.x * kR;
  const int k_vecs = k / 8;
  float acc[kR][kM];
#pragma unroll
  for (int r = 0; r < kR; ++r) {
#pragma unroll
    for (int m = 0; m < kM; ++m) acc[r][m] = 0.f;
  }
  // kU vectors per row per step, every load of the step before any
  // multiply: at K = 8192 (the down projection) a thread has 4 vectors per
  // row, which one at a time are 4 dependent round trips.
  uint4 wv[kU][kR];
  auto load_w = [&](int base) {
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const int vec = base + u * kThreads;
#pragma unroll
      for (int r = 0; r < kR; ++r) {
        wv[u][r] = row0 + r < n && vec < k_vecs
                       ? __ldg(reinterpret_cast<const uint4*>(w + int64_t(row0 + r) * k) + vec)
                       : make_uint4(0, 0, 0, 0);
      }
    }
  };
  // The weights are constant for the whole step: the first vectors load
  // before waiting for the kernel that writes x (pdl.cuh), which lets the
  // next kernel queue behind this one as early.
  load_w(tid);
  AllowDependents();
  WaitForPrimary();
  if constexpr (kX == XKind::kRmsNorm) {
    NormFirstPass<T, kM, kWarps>(norm, rows, k, stash, ss_partial, inv_rms);
  }
  for (int base = tid; base < k_vecs; base += kThreads * kU) {
    if (base != tid) load_w(base);
    uint4 xv[kU][kM];
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const int vec = base + u * kThreads;
      const bool in = vec < k_vecs;
      if constexpr (kX == XKind::kRmsNorm) {
        float nw[8];
        if (in) LoadVec16(norm.weight + vec * 8, nw);
#pragma unroll
        for (int m = 0; m < kM; ++m) {
          xv[u][m] = m < rows && in ? NormedX<T>(stash[m * k_vecs + vec], nw, inv_rms[m])
                                    : make_uint4(0, 0, 0, 0);
        }
      } else {
#pragma unroll
        for (int m = 0; m < kM; ++m) {
          xv[u][m] = m < rows && in ? LoadX<T, kX>(x, m, k, vec) : make_uint4(0, 0, 0, 0);
        }
      }
    }
#pragma unroll
    for (int u = 0; u < kU; ++u) {
#pragma unroll
      for (int r = 0; r < kR; ++r) {
#pragma unroll
        for (int m = 0; m < kM; ++m) acc[r][m] += Dot8<T>(wv[u][r], xv[u][m]);
      }
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
  if constexpr (kX == XKind::kRmsNorm) {
    if (norm.delta == nullptr) return;  // no add: the residual stays as it is
    // Every thread of this CTA has used its residual reads (the barrier
    // above); the last CTA to count knows that of every CTA.
    if (tid == 0) {
      __threadfence();  // orders this CTA's residual reads before its count (PTX model)
      last = atomicAdd(norm.counter, 1) == static_cast<int>(gridDim.x) - 1;
    }
    __syncthreads();
    if (!last) return;
    __threadfence();  // the other CTAs' reads, counted above, before these writes
    for (int i = tid; i < rows * k_vecs; i += kThreads) {
      reinterpret_cast<uint4*>(norm.residual)[i] = stash[i];  // [rows][k / 8], as stashed
    }
    if (tid == 0) *norm.counter = 0;  // ready for the next launch (and graph replay)
  }
}

bool Aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

template <typename T, typename TOut, int kM, XKind kX>
cudaError_t LaunchRows(const T* x, const T* w, const TOut* bias, int rows, int n, int k, TOut* out,
                       const NormArgs<T>& norm, cudaStream_t stream) {
  const unsigned ctas = static_cast<unsigned>((n + kRowsPerCta<kM> - 1) / kRowsPerCta<kM>);
  const size_t stash = kX == XKind::kRmsNorm ? size_t(rows) * k * sizeof(T) : 0;
  if (kMaxSteps<kM> > 1 && k / 8 > kThreads) {
    return LaunchDependent(GemvKernel<T, TOut, kM, kX, kMaxSteps<kM>>, dim3(ctas), dim3(kThreads),
                           stash, stream, x, w, bias, rows, n, k, out, norm);
  }
  return LaunchDependent(GemvKernel<T, TOut, kM, kX, 1>, dim3(ctas), dim3(kThreads), stash, stream,
                         x, w, bias, rows, n, k, out, norm);
}

template <typename T, typename TOut, XKind kX>
absl::Status Launch(Tensor x, Tensor weight, Tensor bias, Tensor out, const NormArgs<T>& norm,
                    cudaStream_t stream) {
  const int rows = static_cast<int>(out.dim(0)), k = static_cast<int>(weight.dim(1));
  const int n = static_cast<int>(weight.dim(0));
  const T* xp = kX == XKind::kRmsNorm ? nullptr : x.as<const T>();
  const T* wp = weight.as<const T>();
  const TOut* bp = bias.empty() ? nullptr : bias.as<const TOut>();
  TOut* op = out.as<TOut>();
  cudaError_t err;
  if (rows <= 1) {
    err = LaunchRows<T, TOut, 1, kX>(xp, wp, bp, rows, n, k, op, norm, stream);
  } else if (rows <= 2) {
    err = LaunchRows<T, TOut, 2, kX>(xp, wp, bp, rows, n, k, op, norm, stream);
  } else if (rows <= 4) {
    err = LaunchRows<T, TOut, 4, kX>(xp, wp, bp, rows, n, k, op, norm, stream);
  } else if constexpr (kX != XKind::kRmsNorm) {
    err = LaunchRows<T, TOut, 8, kX>(xp, wp, bp, rows, n, k, op, norm, stream);
  } else {
    return absl::InternalError("GemvRmsNorm: more than kGemvRmsNormMaxRows rows");
  }
  RETURN_IF_CUDA_ERROR(err);
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

bool GemvRmsNormServes(Tensor residual, Tensor delta, Tensor norm_weight, Tensor weight,
                       Tensor bias, Tensor out) {
  if (residual.rank != 2 || weight.rank != 2 || out.rank != 2) return false;
  const int64_t rows = residual.dim(0), k = residual.dim(1);
  if (rows < 1 || rows > kGemvRmsNormMaxRows || rows * k > kGemvRmsNormMaxElems ||
      weight.dim(0) == 0) {  // no CTA would do the add
    return false;
  }
  if (!delta.empty() && (delta.dtype != residual.dtype || delta.rank != 2 ||
                         delta.dim(0) != rows || delta.dim(1) != k || !Aligned16(delta.data))) {
    return false;
  }
  if (norm_weight.dtype != residual.dtype || norm_weight.numel() != k ||
      !Aligned16(norm_weight.data) || !Aligned16(residual.data) || out.dim(0) != rows) {
    return false;
  }
  return GemvSmallMServes(residual, weight, bias, out);
}

namespace {

template <XKind kX, typename Norm>
absl::Status LaunchForDType(Tensor x, Tensor weight, Tensor bias, Tensor out, const Norm& norm,
                            cudaStream_t stream) {
  if (out.dim(0) == 0 || weight.dim(0) == 0) return absl::OkStatus();
  const bool f32_out = out.dtype == DType::kFloat32;
  if (weight.dtype == DType::kBFloat16) {
    const NormArgs<__nv_bfloat16> args = norm.template As<__nv_bfloat16>();
    return f32_out ? Launch<__nv_bfloat16, float, kX>(x, weight, bias, out, args, stream)
                   : Launch<__nv_bfloat16, __nv_bfloat16, kX>(x, weight, bias, out, args, stream);
  }
  if (weight.dtype == DType::kFloat16) {
    const NormArgs<__half> args = norm.template As<__half>();
    return f32_out ? Launch<__half, float, kX>(x, weight, bias, out, args, stream)
                   : Launch<__half, __half, kX>(x, weight, bias, out, args, stream);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("GemvSmallM: unsupported dtype ", DTypeName(weight.dtype)));
}

// The untyped norm inputs, typed at the dtype switch.
struct NormTensors {
  Tensor residual, delta, weight;
  float eps = 0.f;
  int* counter = nullptr;
  template <typename T>
  NormArgs<T> As() const {
    NormArgs<T> a;
    if (residual.data == nullptr) return a;
    a.residual = residual.as<T>();
    a.delta = delta.empty() ? nullptr : delta.as<const T>();
    a.weight = weight.as<const T>();
    a.eps = eps;
    a.counter = counter;
    return a;
  }
};

}  // namespace

absl::Status LaunchGemvSmallM(Tensor x, Tensor weight, Tensor bias, Tensor out,
                              cudaStream_t stream) {
  return LaunchForDType<XKind::kPlain>(x, weight, bias, out, NormTensors{}, stream);
}

absl::Status LaunchGemvSiluMul(Tensor gate_up, Tensor weight, Tensor bias, Tensor out,
                               cudaStream_t stream) {
  return LaunchForDType<XKind::kSiluMul>(gate_up, weight, bias, out, NormTensors{}, stream);
}

absl::Status LaunchGemvRmsNorm(Tensor residual, Tensor delta, Tensor norm_weight, float eps,
                               int* counter, Tensor weight, Tensor bias, Tensor out,
                               cudaStream_t stream) {
  if (!delta.empty() && counter == nullptr) {
    return absl::InvalidArgumentError("GemvRmsNorm: an add needs the counter");
  }
  return LaunchForDType<XKind::kRmsNorm>(Tensor(), weight, bias, out,
                                         NormTensors{residual, delta, norm_weight, eps, counter},
                                         stream);
}

}  // namespace kvserve::cuda
