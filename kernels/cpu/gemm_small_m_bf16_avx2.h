// The small-M product for bfloat16 weights on AVX2 + FMA, with the
// signature and contract of gemm_small_m.h's per-instruction-set products
// (gemm_small_m.cc dispatches to it; call it only where the CPU has AVX2 and
// FMA). Its own file because it widens the weights differently from the
// shared kernel: see the .cc.
#pragma once

#include <cstdint>

namespace kvserve::cpu::avx2_bf16 {

/// y[r, j] = Σ_i x[r, i] · w[j, i] for r < m, n_begin <= j < n_end; w: [n, k]
/// bfloat16 row-major; float32 FMA accumulation.
void ProductBf16(const float* x, int m, int64_t ldx, const void* w, int k, int n_begin, int n_end,
                 float* y, int64_t ldy);

}  // namespace kvserve::cpu::avx2_bf16
