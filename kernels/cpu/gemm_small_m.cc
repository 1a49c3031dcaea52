// The small-M product (gemm_small_m.h) compiled three times, for AVX-512F,
// AVX2+FMA and any x86-64, and chosen once with __builtin_cpu_supports: the
// build never uses -march=native, the binary runs on other CPUs. Plain
// target pragmas rather than target_clones: an ifunc resolver runs before
// ThreadSanitizer's runtime is up (see attention_cpu.cc).
#include "kernels/cpu/gemm_small_m.h"

#include <cpuid.h>
#include <immintrin.h>

#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/cpu/gemm_small_m_bf16_avx2.h"
#include "kernels/dtype.h"
#include "kernels/q8_0.h"

namespace kvserve::cpu {
namespace {

#if defined(__clang__)  // the fuzz build (docs/testing.md)
#pragma clang attribute push(__attribute__((target("avx512f,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,f16c")
#endif
namespace avx512 {
// 32 vector registers: 4 rows of W × 4 rows of x = 16 accumulators.
struct Ops {
  using V = __m512;
  static constexpr int kWidth = 16, kRowsOfW = 4, kMaxRows = 4;
  static V Zero() { return _mm512_setzero_ps(); }
  static V Load(const float* p) { return _mm512_loadu_ps(p); }
  // The zero-masked forms (all lanes kept) for the same reason as Sum: the
  // plain ones pass an undefined source that GCC 12 warns about.
  static constexpr __mmask16 kAll = 0xffff;
  static V LoadBf16(const uint16_t* p) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    return _mm512_castsi512_ps(
        _mm512_maskz_slli_epi32(kAll, _mm512_maskz_cvtepu16_epi32(kAll, h), 16));
  }
  static V LoadQ8(const int8_t* q, uint16_t scale) {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
    return _mm512_mul_ps(_mm512_maskz_cvtepi32_ps(kAll, _mm512_maskz_cvtepi8_epi32(kAll, b)),
                         _mm512_set1_ps(_cvtsh_ss(scale)));
  }
  static V Fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V Mul(V a, V b) { return _mm512_mul_ps(a, b); }
  // Blocked Q8_0 (gemm_small_m_kernel.inc): 32 registers hold 4 rows of W ×
  // a whole block, their scales and 16 accumulators.
  static constexpr bool kBlockedQ8 = true;
  static V Broadcast(uint16_t half) { return _mm512_set1_ps(_cvtsh_ss(half)); }
  static V LoadQ8Ints(const int8_t* q) {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
    return _mm512_maskz_cvtepi32_ps(kAll, _mm512_maskz_cvtepi8_epi32(kAll, b));
  }
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
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#endif
namespace avx2 {
// 16 vector registers: 4 rows of W × 2 rows of x = 8 accumulators.
struct Ops {
  using V = __m256;
  static constexpr int kWidth = 8, kRowsOfW = 4, kMaxRows = 2;
  static V Zero() { return _mm256_setzero_ps(); }
  static V Load(const float* p) { return _mm256_loadu_ps(p); }
  static V LoadBf16(const uint16_t* p) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
  static V LoadQ8(const int8_t* q, uint16_t scale) {
    const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(q));
    return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b)),
                         _mm256_set1_ps(_cvtsh_ss(scale)));
  }
  static V Fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static constexpr bool kBlockedQ8 = false;  // 16 registers: not enough for a whole block
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
  // Interleaving zeros below each bf16 is the shift left by 16.
  static V LoadBf16(const uint16_t* p) {
    const __m128i h = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
    return _mm_castsi128_ps(_mm_unpacklo_epi16(_mm_setzero_si128(), h));
  }
  // Each byte moved to the top of its 32-bit lane, then shifted back with its sign.
  static V LoadQ8(const int8_t* q, uint16_t scale) {
    int32_t bits;
    std::memcpy(&bits, q, sizeof(bits));
    __m128i v = _mm_cvtsi32_si128(bits);
    v = _mm_unpacklo_epi8(v, v);
    v = _mm_srai_epi32(_mm_unpacklo_epi16(v, v), 24);
    return _mm_mul_ps(_mm_cvtepi32_ps(v), _mm_set1_ps(HalfToFloat(scale)));
  }
  static V Fma(V a, V b, V c) { return _mm_add_ps(_mm_mul_ps(a, b), c); }
  static constexpr bool kBlockedQ8 = false;
  static float Sum(V v) {
    v = _mm_add_ps(v, _mm_movehl_ps(v, v));
    v = _mm_add_ss(v, _mm_shuffle_ps(v, v, 1));
    return _mm_cvtss_f32(v);
  }
};
#include "kernels/cpu/gemm_small_m_kernel.inc"
}  // namespace portable

using ProductFn = void (*)(const float*, int, int64_t, const void*, int, int, int, float*,
                           int64_t);

struct Choice {
  const char* isa;
  ProductFn f32, bf16, q8_0;
  int max_rows;            // cut-over to sgemm for float32 W, measured per instruction set
  int max_rows_converted;  // for bf16 / Q8_0 W, where sgemm needs converted panels
};

// Every variant this CPU can run, best first. F16C converts Q8_0's scales;
// every AVX-512 and AVX2 CPU has it.
// CPUID leaf 1, ECX bit 29: clang 14's __builtin_cpu_supports has no "f16c".
bool CpuHasF16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
}

std::vector<Choice> Runnable() {
  __builtin_cpu_init();
  const bool f16c = CpuHasF16c();
  std::vector<Choice> out;
  if (__builtin_cpu_supports("avx512f") && f16c)
    out.push_back({"avx512f", avx512::ProductF32, avx512::ProductBf16, avx512::ProductQ8, 32, 64});
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c)
    out.push_back({"avx2+fma", avx2::ProductF32, avx2_bf16::ProductBf16, avx2::ProductQ8, 16, 64});
  out.push_back({"portable", portable::ProductF32, portable::ProductBf16, portable::ProductQ8, 1, 1});
  return out;
}

const std::vector<Choice>& AllRunnable() {
  static const std::vector<Choice> all = Runnable();
  return all;
}

const Choice& Chosen() { return AllRunnable().front(); }

void Run(const Choice& c, const float* x, int m, int64_t ldx, const void* w, DType w_dtype, int k,
         int n_begin, int n_end, float* y, int64_t ldy) {
  const ProductFn fn = w_dtype == DType::kBFloat16 ? c.bf16
                       : w_dtype == DType::kQ8_0   ? c.q8_0
                                                   : c.f32;
  fn(x, m, ldx, w, k, n_begin, n_end, y, ldy);
}

}  // namespace

const char* SmallMIsa() { return Chosen().isa; }
int SmallMMaxRows(DType w_dtype) {
  return w_dtype == DType::kFloat32 ? Chosen().max_rows : Chosen().max_rows_converted;
}

bool SmallMSupports(DType w_dtype) {
  return w_dtype == DType::kFloat32 || w_dtype == DType::kBFloat16 || w_dtype == DType::kQ8_0;
}

void SmallMProduct(const float* x, int m, int64_t ldx, const void* w, DType w_dtype, int k,
                   int n_begin, int n_end, float* y, int64_t ldy) {
  Run(Chosen(), x, m, ldx, w, w_dtype, k, n_begin, n_end, y, ldy);
}

std::vector<std::string> SmallMRunnableIsas() {
  std::vector<std::string> out;
  for (const Choice& c : AllRunnable()) out.push_back(c.isa);
  return out;
}

void SmallMProductWithIsa(absl::string_view isa, const float* x, int m, int64_t ldx, const void* w,
                          DType w_dtype, int k, int n_begin, int n_end, float* y, int64_t ldy) {
  for (const Choice& c : AllRunnable()) {
    if (c.isa == isa) return Run(c, x, m, ldx, w, w_dtype, k, n_begin, n_end, y, ldy);
  }
}

}  // namespace kvserve::cpu
