// out = x · Wᵀ (+ bias): up to SmallMMaxRows() rows through the small-M
// kernel (one pass over W for all rows; sgemm repacks W on every call), more
// through OpenBLAS sgemm. The output columns are split over the backend's
// thread pool (OpenBLAS itself runs single-threaded: one source of
// parallelism, no spinning BLAS workers competing with the pool).
#include <cblas.h>

#include <algorithm>

#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/gemm_small_m.h"
#include "kernels/cpu/thread_pool.h"

namespace kvserve::cpu {

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
  const bool small_m = m <= SmallMMaxRows();
  pool.ParallelFor(slices, [&](int s) {
    const int n0 = s * slice, cols = std::min(slice, n - n0);
    float* o = out.as<float>() + n0;
    if (small_m) {
      SmallMProduct(x.as<float>(), m, k, weight.as<float>(), k, n0, n0 + cols, out.as<float>(), n);
    } else {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, cols, k, 1.f, x.as<float>(), k,
                  weight.as<float>() + int64_t(n0) * k, k, 0.f, o, n);
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
