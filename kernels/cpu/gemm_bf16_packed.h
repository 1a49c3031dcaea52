// y = x · Wᵀ for bfloat16 W and float32 x with many rows of x (prefill), on
// AVX-512F: W widened to float32 once per packed panel and multiplied by
// broadcasts of x in a 12 × 32 register block (gemm_bf16_packed_avx512.cc).
// The products are exact float32 products of the stored weights' values and
// x, summed in k order: the same arithmetic as the small-M kernel
// (gemm_small_m.h), only the summation order differs. The CPU backend runs
// it for bf16 weight matrices above the small-M cut-over, under either
// --cpu_activations (docs/cpu_small_m_gemm.md has the measurements).
#pragma once

#include <cstdint>

namespace kvserve::cpu {

/// Rows of x from which the backend runs this kernel rather than the small-M
/// one: measured 1.09-1.19x at 32 rows, 0.84-1.17x at 16-24 (TinyLlama's
/// shapes, two threads; docs/cpu_small_m_gemm.md).
inline constexpr int kPackedBf16FromRows = 32;

/// Whether this CPU runs the kernel (AVX-512F).
bool PackedBf16Supported();

/// y[r, j] = Σ_i x[r, i] · w[j, i] for r < m, n_begin <= j < n_end (one
/// thread's share); x: [m, k] float32 with row stride ldx, w: [n, k] bf16
/// row-major; float32 accumulation. Only where PackedBf16Supported().
void PackedBf16Product(const float* x, int m, int64_t ldx, const uint16_t* w, int k, int n_begin,
                       int n_end, float* y, int64_t ldy);

}  // namespace kvserve::cpu
