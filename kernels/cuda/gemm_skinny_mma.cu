// The skinny tensor-core product (design in gemm_skinny_mma.h).
#include "kernels/cuda/gemm_skinny_mma.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/mma.cuh"
#include "kernels/cuda/pdl.cuh"
#include "kernels/cuda/type_convert.cuh"

namespace kvserve::cuda {
namespace {

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kChunk = 32;  // K per warp step: 4 lanes × 8 elements of a row

// Chunks a warp loads per step: as many as the registers allow (the loads
// of one chunk alone leave a warp waiting a round trip per 32 elements).
template <int kMTiles, int kNTiles>
inline constexpr int kUnroll = kMTiles * kNTiles <= 2 ? 4 : kMTiles * kNTiles <= 4 ? 2 : 1;

// Shared memory per warp: [rows of W][columns (x rows) + 4], the padding
// spreading a fragment's 8 rows over different banks.
template <int kMTiles, int kNTiles>
inline constexpr int kStride = 8 * kNTiles + 4;

// A lane (g = lane / 4, t = lane % 4) loads elements 8t .. 8t + 7 of a
// 32-element chunk of W rows g and g + 8 and of x row g. An m16n8k16
// fragment wants, for each of its two k halves, the pair (2t, 2t + 1) and
// the pair (2t + 8, 2t + 9) from that same lane: its first two 4-byte words
// fill one mma (k slots ↔ elements 8t..8t+3), its last two a second one
// (8t+4..8t+7). A and B are permuted alike, so the sums are the product's.
template <typename T, typename TOut, int kMTiles, int kNTiles>
__global__ void __launch_bounds__(kThreads)
    SkinnyMmaKernel(const T* __restrict__ x,        // [rows ≤ 8·kNTiles, k]
                    const T* __restrict__ w,        // [n, k]
                    const TOut* __restrict__ bias,  // [n] or null
                    int rows, int n, int k,
                    TOut* __restrict__ out) {       // [rows, n]
  constexpr int kRows = 16 * kMTiles, kCols = 8 * kNTiles, kS = kStride<kMTiles, kNTiles>;
  __shared__ float partial[kWarps][kRows * kS];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int row0 = blockIdx.x * kRows;
  const int chunks = k / kChunk;

  const uint4* w_rows[kMTiles][2];
  bool w_ok[kMTiles][2];
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = row0 + 16 * mt + 8 * h + g;
      w_ok[mt][h] = r < n;
      w_rows[mt][h] = reinterpret_cast<const uint4*>(w + int64_t(w_ok[mt][h] ? r : 0) * k) + t;
    }
  }
  // kU chunks per warp step, every load of the step before any mma: a warp
  // has (2·kMTiles + kNTiles)·kU 16-byte loads in flight, not one chunk's.
  constexpr int kU = kUnroll<kMTiles, kNTiles>;
  uint4 wv[kU][kMTiles][2];
  auto load_w = [&](int base) {
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const int chunk = base + u * kWarps;
#pragma unroll
      for (int mt = 0; mt < kMTiles; ++mt) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          wv[u][mt][h] = w_ok[mt][h] && chunk < chunks
                             ? __ldg(w_rows[mt][h] + chunk * (kChunk / 8))
                             : make_uint4(0, 0, 0, 0);
        }
      }
    }
  };
  float c[kMTiles][kNTiles][4];
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt) {
#pragma unroll
    for (int nt = 0; nt < kNTiles; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) c[mt][nt][e] = 0.f;
    }
  }
  // The weights are constant for the step: the first step's load before the
  // wait for the kernel that writes x (pdl.cuh).
  load_w(warp);
  AllowDependents();
  WaitForPrimary();
  for (int base = warp; base < chunks; base += kWarps * kU) {
    if (base != warp) load_w(base);
    uint4 xv[kU][kNTiles];
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const int chunk = base + u * kWarps;
#pragma unroll
      for (int nt = 0; nt < kNTiles; ++nt) {
        const int m = 8 * nt + g;
        xv[u][nt] = m < rows && chunk < chunks
                        ? __ldg(reinterpret_cast<const uint4*>(x + int64_t(m) * k) +
                                chunk * (kChunk / 8) + t)
                        : make_uint4(0, 0, 0, 0);
      }
    }
#pragma unroll
    for (int u = 0; u < kU; ++u) {
#pragma unroll
      for (int mt = 0; mt < kMTiles; ++mt) {
        const uint32_t a_lo[4] = {wv[u][mt][0].x, wv[u][mt][1].x, wv[u][mt][0].y, wv[u][mt][1].y};
        const uint32_t a_hi[4] = {wv[u][mt][0].z, wv[u][mt][1].z, wv[u][mt][0].w, wv[u][mt][1].w};
#pragma unroll
        for (int nt = 0; nt < kNTiles; ++nt) {
          mma::Mma16816<T>(c[mt][nt], a_lo, xv[u][nt].x, xv[u][nt].y);
          mma::Mma16816<T>(c[mt][nt], a_hi, xv[u][nt].z, xv[u][nt].w);
        }
      }
    }
  }
  // c[mt][nt]: (row 16mt + g, column 8nt + 2t, +1) and (row + 8, the same columns).
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt) {
#pragma unroll
    for (int nt = 0; nt < kNTiles; ++nt) {
      const int r = 16 * mt + g, col = 8 * nt + 2 * t;
      partial[warp][r * kS + col] = c[mt][nt][0];
      partial[warp][r * kS + col + 1] = c[mt][nt][1];
      partial[warp][(r + 8) * kS + col] = c[mt][nt][2];
      partial[warp][(r + 8) * kS + col + 1] = c[mt][nt][3];
    }
  }
  __syncthreads();
  // Consecutive threads take consecutive rows of W: each x row's outputs are
  // written as runs of kRows.
  for (int idx = threadIdx.x; idx < kRows * kCols; idx += kThreads) {
    const int r = idx % kRows, m = idx / kRows;
    if (m >= rows || row0 + r >= n) continue;
    float sum = 0.f;
#pragma unroll
    for (int i = 0; i < kWarps; ++i) sum += partial[i][r * kS + m];
    if (bias != nullptr) sum += ToFloat(bias[row0 + r]);
    out[int64_t(m) * n + row0 + r] = FromFloat<TOut>(sum);
  }
}

bool Aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

template <typename T, typename TOut, int kMTiles, int kNTiles>
cudaError_t LaunchTiles(const T* x, const T* w, const TOut* bias, int rows, int n, int k, TOut* out,
                        cudaStream_t stream) {
  constexpr int kRows = 16 * kMTiles;
  const unsigned ctas = static_cast<unsigned>((n + kRows - 1) / kRows);
  return LaunchDependent(SkinnyMmaKernel<T, TOut, kMTiles, kNTiles>, dim3(ctas), dim3(kThreads), 0,
                         stream, x, w, bias, rows, n, k, out);
}

template <typename T, typename TOut>
absl::Status Launch(Tensor x, Tensor weight, Tensor bias, Tensor out, int rows_per_cta,
                    cudaStream_t stream) {
  const int rows = static_cast<int>(x.dim(0)), k = static_cast<int>(x.dim(1));
  const int n = static_cast<int>(weight.dim(0));
  const T* xp = x.as<const T>();
  const T* wp = weight.as<const T>();
  const TOut* bp = bias.empty() ? nullptr : bias.as<const TOut>();
  TOut* op = out.as<TOut>();
  cudaError_t err;
  if (rows_per_cta == 32) {
    err = rows <= 16 ? LaunchTiles<T, TOut, 2, 2>(xp, wp, bp, rows, n, k, op, stream)
                     : LaunchTiles<T, TOut, 2, 4>(xp, wp, bp, rows, n, k, op, stream);
  } else if (rows <= 16) {
    err = LaunchTiles<T, TOut, 1, 2>(xp, wp, bp, rows, n, k, op, stream);
  } else if (rows <= 32) {
    err = LaunchTiles<T, TOut, 1, 4>(xp, wp, bp, rows, n, k, op, stream);
  } else {
    err = LaunchTiles<T, TOut, 1, 8>(xp, wp, bp, rows, n, k, op, stream);
  }
  RETURN_IF_CUDA_ERROR(err);
  return absl::OkStatus();
}

}  // namespace

bool SkinnyMmaServes(Tensor x, Tensor weight, Tensor bias, Tensor out, int rows_per_cta) {
  const bool half = x.dtype == DType::kBFloat16 || x.dtype == DType::kFloat16;
  const int64_t most = rows_per_cta == 32 ? 32 : rows_per_cta == 16 ? kSkinnyMaxRows : 0;
  return half && weight.dtype == x.dtype && x.rank == 2 && weight.rank == 2 && out.rank == 2 &&
         x.dim(0) >= 1 && x.dim(0) <= most && x.dim(1) % kChunk == 0 &&
         weight.dim(1) == x.dim(1) && out.dim(0) == x.dim(0) && out.dim(1) == weight.dim(0) &&
         Aligned16(x.data) && Aligned16(weight.data) &&
         (out.dtype == x.dtype || out.dtype == DType::kFloat32) &&
         (bias.empty() || bias.dtype == out.dtype);
}

absl::Status LaunchSkinnyMma(Tensor x, Tensor weight, Tensor bias, Tensor out, int rows_per_cta,
                             cudaStream_t stream) {
  if (x.dim(0) == 0 || weight.dim(0) == 0) return absl::OkStatus();
  const bool f32_out = out.dtype == DType::kFloat32;
  if (x.dtype == DType::kBFloat16) {
    return f32_out ? Launch<__nv_bfloat16, float>(x, weight, bias, out, rows_per_cta, stream)
                   : Launch<__nv_bfloat16, __nv_bfloat16>(x, weight, bias, out, rows_per_cta,
                                                          stream);
  }
  if (x.dtype == DType::kFloat16) {
    return f32_out ? Launch<__half, float>(x, weight, bias, out, rows_per_cta, stream)
                   : Launch<__half, __half>(x, weight, bias, out, rows_per_cta, stream);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("SkinnyMma: unsupported dtype ", DTypeName(x.dtype)));
}

}  // namespace kvserve::cuda
