// out = x · Wᵀ (+ bias): up to SmallMMaxRows(W's dtype) rows through the small-M
// kernel (one pass over W for all rows; sgemm repacks W on every call), more
// through OpenBLAS sgemm. The output columns are split over the backend's
// thread pool (OpenBLAS itself runs single-threaded: one source of
// parallelism, no spinning BLAS workers competing with the pool).
//
// W may be float32, bfloat16 or Q8_0 (docs/cpu_weight_dtypes.md). The small-M
// kernel converts it in registers; above the cut-over (prefill), panels of W
// rows are converted to float32 into a per-thread buffer the size of L2's
// share and multiplied by sgemm: conversion is O(N·K) against sgemm's
// O(M·N·K), and Debian's OpenBLAS 0.3.21 has no bf16 GEMM (sbgemm).
#include <cblas.h>

#include <algorithm>
#include <vector>

#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/gemm_small_m.h"
#include "kernels/cpu/thread_pool.h"

namespace kvserve::cpu {
namespace {

// W rows converted per sgemm call: about 256 KiB of float32, a multiple of 16.
int PanelRows(int k) { return std::max(16, (256 * 1024 / (k * 4)) & ~15); }

// out[:, n0:n0+cols] = x · W[n0:n0+cols]ᵀ for W stored in a non-float32 dtype.
void ConvertedPanelsProduct(const float* x, int m, int k, Tensor weight, int n0, int cols,
                            float* out, int n) {
  thread_local std::vector<float> panel;
  const int rows = PanelRows(k);
  panel.resize(size_t(rows) * k);
  for (int r0 = 0; r0 < cols; r0 += rows) {
    const int r = std::min(rows, cols - r0);
    const Tensor part = weight.Rows(n0 + r0, r);
    (void)ConvertToFloat32(part.data, part.dtype, part.numel(), panel.data());  // checked dtypes
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, r, k, 1.f, x, k, panel.data(), k, 0.f,
                out + n0 + r0, n);
  }
}

}  // namespace

void Linear(Tensor x, Tensor weight, Tensor bias, Tensor out) {
  const int m = static_cast<int>(x.dim(0)), k = static_cast<int>(x.dim(1));
  const int n = static_cast<int>(weight.dim(0));
  if (m == 0) return;
  ThreadPool& pool = ThreadPool::Shared();
  // Column slices: a few per thread for balance, multiples of 16 (SIMD and
  // cache-line friendly), none smaller than 64 columns.
  const int target = std::max(1, std::min(pool.num_threads() * 2, n / 64));
  const int slice = ((n + target - 1) / target + 15) & ~15;
  const int slices = (n + slice - 1) / slice;
  const bool small_m = m <= SmallMMaxRows(weight.dtype);
  pool.ParallelFor(slices, [&](int s) {
    const int n0 = s * slice, cols = std::min(slice, n - n0);
    float* o = out.as<float>() + n0;
    if (small_m) {
      SmallMProduct(x.as<float>(), m, k, weight.data, weight.dtype, k, n0, n0 + cols,
                    out.as<float>(), n);
    } else if (weight.dtype == DType::kFloat32) {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, cols, k, 1.f, x.as<float>(), k,
                  weight.as<float>() + int64_t(n0) * k, k, 0.f, o, n);
    } else {
      ConvertedPanelsProduct(x.as<float>(), m, k, weight, n0, cols, out.as<float>(), n);
    }
    if (!bias.empty()) {
      const float* b = bias.as<float>() + n0;
      for (int r = 0; r < m; ++r) {
        float* row = o + int64_t(r) * n;
        for (int c = 0; c < cols; ++c) row[c] += b[c];
      }
    }
  });
}

}  // namespace kvserve::cpu
