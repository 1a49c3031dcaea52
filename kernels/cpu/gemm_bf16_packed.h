// y = x · Wᵀ for bfloat16 W and float32 x with many rows of x (batches,
// prefill), on AVX-512F or AVX2: W widened to float32 once per packed panel
// and multiplied by broadcasts of x in a 12 × 32 (AVX2: 6 × 16) register
// block (gemm_bf16_packed.cc).
// The products are exact float32 products of the stored weights' values and
// x, summed in k order: the same arithmetic as the small-M kernel
// (gemm_small_m.h), only the summation order differs. The CPU backend runs
// it for bf16 weight matrices above the small-M cut-over, under either
// --cpu_activations (docs/cpu_small_m_gemm.md has the measurements).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace kvserve::cpu {

/// Whether this CPU runs the kernel (AVX-512F, or AVX2 with FMA).
bool PackedBf16Supported();

/// Rows of x from which the backend runs this kernel rather than the small-M
/// one, for the instruction set chosen (measured: docs/cpu_small_m_gemm.md).
int PackedBf16FromRows();

/// y[r, j] = Σ_i x[r, i] · w[j, i] for r < m, n_begin <= j < n_end (one
/// thread's share); x: [m, k] float32 with row stride ldx, w: [n, k] bf16
/// row-major; float32 accumulation. Only where PackedBf16Supported().
void PackedBf16Product(const float* x, int m, int64_t ldx, const uint16_t* w, int k, int n_begin,
                       int n_end, float* y, int64_t ldy);

/// The instruction sets this CPU runs the kernel with, best first
/// ("avx512f", "avx2+fma"), and the product with one of them (for tests
/// and benchmarks; an unknown name does nothing).
std::vector<std::string> PackedBf16RunnableIsas();
void PackedBf16ProductWithIsa(absl::string_view isa, const float* x, int m, int64_t ldx,
                              const uint16_t* w, int k, int n_begin, int n_end, float* y,
                              int64_t ldy);

}  // namespace kvserve::cpu
