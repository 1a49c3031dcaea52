// y = x · Wᵀ for bfloat16 W with x rounded to bfloat16 (round to nearest
// even), on AVX512_BF16's vdpbf16ps: two bf16 products per float32 lane and
// instruction, accumulated in float32 — llama.cpp's arithmetic for BF16
// files, at twice the float32 FMA rate. The CPU backend uses it for bf16
// weight matrices under --cpu_activations=auto above the small-M cut-over
// (prefill; docs/quantized_weights.md); decode sizes and
// --cpu_activations=float32 keep float32 activations (gemm_small_m.h).
#pragma once

#include <cstdint>

namespace kvserve::cpu {

/// Whether this CPU runs the kernel (AVX512_BF16 with AVX-512 F/BW).
bool Bf16DotSupported();

/// Rows [row_begin, row_end) of x ([*, k] float32, row stride ldx) rounded
/// to bfloat16 into xb ([*, k], row stride k).
void RoundRowsToBf16(const float* x, int64_t ldx, int k, int row_begin, int row_end, uint16_t* xb);

/// y[r, j] = Σ_i xb[r, i] · w[j, i] for r < m, n_begin <= j < n_end (one
/// thread's share); xb: [m, k] bf16, w: [n, k] bf16 row-major; float32
/// accumulation. Only where Bf16DotSupported().
void Bf16Product(const uint16_t* xb, int m, int k, const uint16_t* w, int n_begin, int n_end,
                 float* y, int64_t ldy);

}  // namespace kvserve::cpu
