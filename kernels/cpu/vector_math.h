// Exponential-based row operations of the CPU backend (the attention's
// softmax, SiLU·mul), with exp evaluated 8 lanes at a time on AVX2 + FMA
// machines (chosen by CPUID) and by std::exp elsewhere.
//
// Why: libm's scalar expf was 4-5% of a prefill (the softmax over up to
// context × 64 scores per head and chunk) and most of SiLU·mul. The vector
// exp is Cephes' expf (range reduction by ln 2 in two parts, a degree-6
// polynomial, the exponent added in integers): within 2 float32 ulp of
// std::exp on [-87.3, 88.7] (vector_math_test sweeps it); exp(-inf) and
// anything below the smallest normal result give exactly 0 (masked keys get
// exactly zero weight), above 88.72 +inf, NaN stays NaN.
// kernels/attention_math.h's GuardedSoftmaxInPlace (std::exp) stays the
// reference attention's.
#pragma once

#include <cstdint>

namespace kvserve::cpu {

/// v[i] = exp(v[i] - shift) for i < n; returns the sum of the results.
float ExpShiftedInPlace(float* v, int64_t n, float shift);

/// As kernels/attention_math.h's GuardedSoftmaxInPlace: scores[0..n)
/// (masked = −∞) into probabilities in place; false (all zeros) when every
/// entry is masked.
bool FastGuardedSoftmaxInPlace(float* scores, int n);

/// out[i] = gate[i] / (1 + exp(-gate[i])) · up[i] for i < n.
void SiluMulRow(const float* gate, const float* up, float* out, int64_t n);

/// Whether the vector exp runs on this CPU ("avx2" or "scalar").
const char* VectorMathIsa();

}  // namespace kvserve::cpu
