// The vector exp and the row operations built on it (vector_math.h). Target
// pragmas rather than -march, so the binary runs on any x86-64 (see
// gemm_small_m.cc); the scalar forms are the fallback.
#include "kernels/cpu/vector_math.h"

#include <immintrin.h>

#include <cmath>
#include <limits>

#include "kernels/attention_math.h"

namespace kvserve::cpu {
namespace {

float ExpShiftedScalar(float* v, int64_t n, float shift) {
  float sum = 0.f;
  for (int64_t i = 0; i < n; ++i) {
    v[i] = std::exp(v[i] - shift);
    sum += v[i];
  }
  return sum;
}

void SiluMulScalar(const float* gate, const float* up, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = gate[i] / (1.f + std::exp(-gate[i])) * up[i];
}

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#endif
namespace avx2 {

// exp(x) in 8 lanes (Cephes expf): x = n·ln2 + r, |r| ≤ ln2 / 2, exp(r) by
// its minimax polynomial, 2^n by adding n to the exponent bits.
inline __m256 Exp(__m256 x) {
  const __m256 lo = _mm256_set1_ps(-87.33654f), hi = _mm256_set1_ps(88.72283f);
  // Below lo the result would not be a normal float: 0 (exp(-inf) = 0
  // exactly); above hi, +inf; NaN passes through.
  const __m256 underflow = _mm256_cmp_ps(x, lo, _CMP_LT_OQ);
  const __m256 overflow = _mm256_cmp_ps(x, hi, _CMP_GT_OQ);
  const __m256 nan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
  const __m256 xc = _mm256_min_ps(_mm256_max_ps(x, lo), hi);
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(xc, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), xc);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  const __m256 r2 = _mm256_mul_ps(r, r);
  p = _mm256_add_ps(_mm256_fmadd_ps(p, r2, r), _mm256_set1_ps(1.f));
  // n in [-126, 128]: 2^n as (n + 127) << 23, applied as two halves so that
  // n = 128 (x just under hi) does not overflow the exponent field.
  const __m256i ni = _mm256_cvtps_epi32(n);
  const __m256i half1 = _mm256_srai_epi32(ni, 1), half2 = _mm256_sub_epi32(ni, half1);
  const __m256i bias = _mm256_set1_epi32(127);
  p = _mm256_mul_ps(p, _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(half1, bias), 23)));
  p = _mm256_mul_ps(p, _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(half2, bias), 23)));
  p = _mm256_andnot_ps(underflow, p);
  p = _mm256_blendv_ps(p, _mm256_set1_ps(std::numeric_limits<float>::infinity()), overflow);
  return _mm256_blendv_ps(p, x, nan);
}

inline float Sum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// The last n % 8 elements through a zero-padded vector (no scalar exp, so
// every element gets the same function).
inline __m256 LoadTail(const float* p, int count, float fill) {
  alignas(32) float t[8];
  for (int i = 0; i < 8; ++i) t[i] = i < count ? p[i] : fill;
  return _mm256_load_ps(t);
}

inline void StoreTail(float* p, __m256 v, int count) {
  alignas(32) float t[8];
  _mm256_store_ps(t, v);
  for (int i = 0; i < count; ++i) p[i] = t[i];
}

float ExpShifted(float* v, int64_t n, float shift) {
  const __m256 s = _mm256_set1_ps(shift);
  __m256 sum = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 e = Exp(_mm256_sub_ps(_mm256_loadu_ps(v + i), s));
    _mm256_storeu_ps(v + i, e);
    sum = _mm256_add_ps(sum, e);
  }
  if (i < n) {
    const int rest = static_cast<int>(n - i);
    // Padding lanes hold -inf: exp gives 0 there, so the sum is unchanged.
    const __m256 e = Exp(_mm256_sub_ps(LoadTail(v + i, rest, kMaskedScore), s));
    StoreTail(v + i, e, rest);
    sum = _mm256_add_ps(sum, e);
  }
  return Sum(sum);
}

inline __m256 Silu(__m256 g, __m256 u) {
  const __m256 e = Exp(_mm256_sub_ps(_mm256_setzero_ps(), g));
  return _mm256_mul_ps(_mm256_div_ps(g, _mm256_add_ps(_mm256_set1_ps(1.f), e)), u);
}

void SiluMul(const float* gate, const float* up, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(out + i, Silu(_mm256_loadu_ps(gate + i), _mm256_loadu_ps(up + i)));
  }
  if (i < n) {
    const int rest = static_cast<int>(n - i);
    StoreTail(out + i, Silu(LoadTail(gate + i, rest, 0.f), LoadTail(up + i, rest, 0.f)), rest);
  }
}

}  // namespace avx2
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

bool HasAvx2() {
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }();
  return has;
}

}  // namespace

float ExpShiftedInPlace(float* v, int64_t n, float shift) {
  return HasAvx2() ? avx2::ExpShifted(v, n, shift) : ExpShiftedScalar(v, n, shift);
}

bool FastGuardedSoftmaxInPlace(float* scores, int n) {
  float max_score = kMaskedScore;
  for (int j = 0; j < n; ++j) max_score = scores[j] > max_score ? scores[j] : max_score;
  if (max_score == kMaskedScore) {
    for (int j = 0; j < n; ++j) scores[j] = 0.f;
    return false;
  }
  const float inv = 1.f / ExpShiftedInPlace(scores, n, max_score);  // ≥ 1: the max gives exp(0)
  for (int j = 0; j < n; ++j) scores[j] *= inv;
  return true;
}

void SiluMulRow(const float* gate, const float* up, float* out, int64_t n) {
  if (HasAvx2()) return avx2::SiluMul(gate, up, out, n);
  SiluMulScalar(gate, up, out, n);
}

const char* VectorMathIsa() { return HasAvx2() ? "avx2" : "scalar"; }

}  // namespace kvserve::cpu
