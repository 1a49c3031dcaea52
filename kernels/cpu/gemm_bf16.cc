// The bf16 × bf16 product (gemm_bf16.h), compiled for AVX512_BF16 with a
// target pragma and chosen at run time (the build never uses -march=native).
#include "kernels/cpu/gemm_bf16.h"

#include <immintrin.h>

#include <algorithm>

#include "kernels/dtype.h"

namespace kvserve::cpu {
namespace {

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512bf16"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512bf16")
#endif

// Halving adds through memory (GCC 12's reduce intrinsics trip
// -Wuninitialized, see gemm_small_m.cc); once per output.
inline float Sum(__m512 v) {
  alignas(64) float t[16];
  _mm512_store_ps(t, v);
  for (int w = 8; w > 0; w /= 2)
    for (int i = 0; i < w; ++i) t[i] += t[i + w];
  return t[0];
}

// 32 bf16 values of a row from element i; past k, zeros.
inline __m512bh Load(const uint16_t* row, int i, int k) {
  const int left = k - i;
  const __mmask32 mask = left >= 32 ? ~__mmask32{0} : (__mmask32{1} << left) - 1;
  return (__m512bh)_mm512_maskz_loadu_epi16(mask, row + i);
}

// NR rows of W × MR rows of x: NR·MR accumulators, each vector of W loaded
// once per step of 32 and used for all MR rows.
template <int NR, int MR>
void Block(const uint16_t* x, int k, const uint16_t* w, float* y, int64_t ldy) {
  __m512 acc[MR][NR];
  for (int r = 0; r < MR; ++r)
    for (int j = 0; j < NR; ++j) acc[r][j] = _mm512_setzero_ps();
  // Whole steps with plain loads, then the tail masked: the whole steps need
  // no mask computed for each of their 8 loads.
  int i = 0;
  for (; i + 32 <= k; i += 32) {
    __m512bh wv[NR];
    for (int j = 0; j < NR; ++j) wv[j] = (__m512bh)_mm512_loadu_si512(w + int64_t(j) * k + i);
    for (int r = 0; r < MR; ++r) {
      const __m512bh xv = (__m512bh)_mm512_loadu_si512(x + int64_t(r) * k + i);
      for (int j = 0; j < NR; ++j) acc[r][j] = _mm512_dpbf16_ps(acc[r][j], xv, wv[j]);
    }
  }
  if (i < k) {
    __m512bh wv[NR];
    for (int j = 0; j < NR; ++j) wv[j] = Load(w + int64_t(j) * k, i, k);
    for (int r = 0; r < MR; ++r) {
      const __m512bh xv = Load(x + int64_t(r) * k, i, k);
      for (int j = 0; j < NR; ++j) acc[r][j] = _mm512_dpbf16_ps(acc[r][j], xv, wv[j]);
    }
  }
  for (int r = 0; r < MR; ++r)
    for (int j = 0; j < NR; ++j) y[r * ldy + j] = Sum(acc[r][j]);
}

template <int NR>
void RowsOfX(const uint16_t* x, int m, int k, const uint16_t* w, float* y, int64_t ldy) {
  int r = 0;
  for (; r + 4 <= m; r += 4) Block<NR, 4>(x + int64_t(r) * k, k, w, y + r * ldy, ldy);
  for (; r < m; ++r) Block<NR, 1>(x + int64_t(r) * k, k, w, y + r * ldy, ldy);
}

void Product(const uint16_t* x, int m, int k, const uint16_t* w, int n_begin, int n_end,
             float* y, int64_t ldy) {
  // 64 rows of x at a time, so they stay in L2 while the rows of W stream.
  for (int r0 = 0; r0 < m; r0 += 64) {
    const int rows = std::min(64, m - r0);
    const uint16_t* xr = x + int64_t(r0) * k;
    float* yr = y + r0 * ldy;
    int j = n_begin;
    for (; j + 4 <= n_end; j += 4) RowsOfX<4>(xr, rows, k, w + int64_t(j) * k, yr + j, ldy);
    for (; j < n_end; ++j) RowsOfX<1>(xr, rows, k, w + int64_t(j) * k, yr + j, ldy);
  }
}

void Round(const float* x, int64_t ldx, int k, int row_begin, int row_end, uint16_t* xb) {
  for (int r = row_begin; r < row_end; ++r) {
    const float* in = x + r * ldx;
    uint16_t* out = xb + int64_t(r) * k;
    int i = 0;
    for (; i + 32 <= k; i += 32) {  // round to nearest even, as FloatToBFloat16
      const __m512bh v = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(in + i + 16), _mm512_loadu_ps(in + i));
      _mm512_storeu_si512(out + i, (__m512i)v);
    }
    for (; i < k; ++i) out[i] = FloatToBFloat16(in[i]);
  }
}

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

}  // namespace

bool Bf16DotSupported() {
  static const bool supported = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512bw");
  }();
  return supported;
}

void RoundRowsToBf16(const float* x, int64_t ldx, int k, int row_begin, int row_end, uint16_t* xb) {
  Round(x, ldx, k, row_begin, row_end, xb);
}

void Bf16Product(const uint16_t* xb, int m, int k, const uint16_t* w, int n_begin, int n_end,
                 float* y, int64_t ldy) {
  Product(xb, m, k, w, n_begin, n_end, y, ldy);
}

}  // namespace kvserve::cpu
