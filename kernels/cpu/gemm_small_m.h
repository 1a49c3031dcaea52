// y = x · Wᵀ for a few rows of x (decode), streaming W from memory once for
// all rows. OpenBLAS's sgemm repacks a panel of W on every call, which for
// one to a few rows costs more than the product (docs/cpu_small_m_gemm.md).
#pragma once

#include <cstdint>

namespace kvserve::cpu {

/// The instruction set the small-M product runs with on this CPU, chosen once
/// at first use: "avx512f", "avx2+fma" or "portable".
const char* SmallMIsa();

/// The largest row count for which the small-M product beats OpenBLAS sgemm
/// on this CPU's instruction set (measured: docs/cpu_small_m_gemm.md);
/// Linear uses sgemm above it.
int SmallMMaxRows();

/// y[r, j] = Σ_i x[r, i] · w[j, i] for r < m and n_begin <= j < n_end, one
/// thread's share (no threading inside). Float32 accumulation; differs from
/// sgemm only by summation order.
///   x: [m, k] row stride ldx;  w: [n, k] row-major;  y: [m, n] row stride ldy.
void SmallMProduct(const float* x, int m, int64_t ldx, const float* w, int k, int n_begin,
                   int n_end, float* y, int64_t ldy);

}  // namespace kvserve::cpu
