// The small-M product (gemm_small_m.h) compiled three times, for AVX-512F,
// AVX2+FMA and any x86-64, and chosen once with __builtin_cpu_supports: the
// build never uses -march=native, the binary runs on other CPUs. Plain
// target pragmas rather than target_clones: an ifunc resolver runs before
// ThreadSanitizer's runtime is up (see attention_cpu.cc).
#include "kernels/cpu/gemm_small_m.h"

#include <immintrin.h>

namespace kvserve::cpu {
namespace {

#if defined(__clang__)  // the fuzz build (docs/testing.md)
#pragma clang attribute push(__attribute__((target("avx512f"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f")
#endif
namespace avx512 {
// 32 vector registers: 4 rows of W × 4 rows of x = 16 accumulators.
struct Ops {
  using V = __m512;
  static constexpr int kWidth = 16, kRowsOfW = 4, kMaxRows = 4;
  static V Zero() { return _mm512_setzero_ps(); }
  static V Load(const float* p) { return _mm512_loadu_ps(p); }
  static V Fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  // Through memory: GCC 12's reduce/extract intrinsics trip -Wuninitialized
  // (their _mm256_undefined_pd), and this runs once per output, not per k.
  static float Sum(V v) {
    alignas(64) float t[16];
    _mm512_store_ps(t, v);
    float s[8];
    for (int i = 0; i < 8; ++i) s[i] = t[i] + t[i + 8];
    return ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7]));
  }
};
#include "kernels/cpu/gemm_small_m_kernel.inc"
}  // namespace avx512
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

#if defined(__clang__)  // the fuzz build (docs/testing.md)
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#endif
namespace avx2 {
// 16 vector registers: 4 rows of W × 2 rows of x = 8 accumulators.
struct Ops {
  using V = __m256;
  static constexpr int kWidth = 8, kRowsOfW = 4, kMaxRows = 2;
  static V Zero() { return _mm256_setzero_ps(); }
  static V Load(const float* p) { return _mm256_loadu_ps(p); }
  static V Fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static float Sum(V v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
};
#include "kernels/cpu/gemm_small_m_kernel.inc"
}  // namespace avx2
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

namespace portable {
// SSE2 (baseline x86-64): 4 rows of W × 1 row of x.
struct Ops {
  using V = __m128;
  static constexpr int kWidth = 4, kRowsOfW = 4, kMaxRows = 1;
  static V Zero() { return _mm_setzero_ps(); }
  static V Load(const float* p) { return _mm_loadu_ps(p); }
  static V Fma(V a, V b, V c) { return _mm_add_ps(_mm_mul_ps(a, b), c); }
  static float Sum(V v) {
    v = _mm_add_ps(v, _mm_movehl_ps(v, v));
    v = _mm_add_ss(v, _mm_shuffle_ps(v, v, 1));
    return _mm_cvtss_f32(v);
  }
};
#include "kernels/cpu/gemm_small_m_kernel.inc"
}  // namespace portable

using ProductFn = void (*)(const float*, int, int64_t, const float*, int, int, int, float*,
                           int64_t);

struct Choice {
  const char* isa;
  ProductFn fn;
  int max_rows;  // cut-over to sgemm, measured per instruction set
};

Choice Choose() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return {"avx512f", avx512::Product, 16};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return {"avx2+fma", avx2::Product, 16};
  return {"portable", portable::Product, 1};
}

const Choice& Chosen() {
  static const Choice choice = Choose();
  return choice;
}

}  // namespace

const char* SmallMIsa() { return Chosen().isa; }
int SmallMMaxRows() { return Chosen().max_rows; }

void SmallMProduct(const float* x, int m, int64_t ldx, const float* w, int k, int n_begin,
                   int n_end, float* y, int64_t ldy) {
  Chosen().fn(x, m, ldx, w, k, n_begin, n_end, y, ldy);
}

}  // namespace kvserve::cpu
