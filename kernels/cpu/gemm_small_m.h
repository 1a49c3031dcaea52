// y = x · Wᵀ for a few rows of x (decode), streaming W from memory once for
// all rows. OpenBLAS's sgemm repacks a panel of W on every call, which for
// one to a few rows costs more than the product (docs/cpu_small_m_gemm.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "kernels/dtype.h"

namespace kvserve::cpu {

/// The instruction set the small-M product runs with on this CPU, chosen once
/// at first use: "avx512f", "avx2+fma" or "portable".
const char* SmallMIsa();

/// The largest row count for which the small-M product beats OpenBLAS sgemm
/// on this CPU's instruction set, for weights of `w_dtype` (measured:
/// docs/cpu_small_m_gemm.md, cpu_weight_dtypes.md; bf16 / Q8_0 weights
/// would need converting for sgemm, so their cut-over is higher); Linear
/// uses sgemm above it.
int SmallMMaxRows(DType w_dtype = DType::kFloat32);

/// Whether SmallMProduct takes weights of this dtype: float32, bfloat16, q8_0.
bool SmallMSupports(DType w_dtype);

/// y[r, j] = Σ_i x[r, i] · w[j, i] for r < m and n_begin <= j < n_end, one
/// thread's share (no threading inside). The weights are converted to float32
/// in registers (exactly); float32 accumulation, so the result differs from
/// sgemm over the float32 values only by summation order.
///   x: [m, k] float32, row stride ldx;  w: [n, k] row-major in `w_dtype`
///   (q8_0: k a multiple of 32);  y: [m, n] float32, row stride ldy.
void SmallMProduct(const float* x, int m, int64_t ldx, const void* w, DType w_dtype, int k,
                   int n_begin, int n_end, float* y, int64_t ldy);

/// For tests: the instruction sets this CPU can run the product with, best
/// first ("portable" always), and the product run with one of them (a name
/// not in the list computes nothing).
std::vector<std::string> SmallMRunnableIsas();
void SmallMProductWithIsa(absl::string_view isa, const float* x, int m, int64_t ldx, const void* w,
                          DType w_dtype, int k, int n_begin, int n_end, float* y, int64_t ldy);

}  // namespace kvserve::cpu
