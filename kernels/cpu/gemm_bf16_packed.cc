// The packed bf16 product (gemm_bf16_packed.h): gemm_bf16_packed_kernel.inc
// compiled for AVX-512F and for AVX2 + FMA with target pragmas, chosen at
// run time (the build never uses -march=native).
//
// Why a packed kernel: with dozens to hundreds of rows of x the product is
// compute bound, and what each instruction costs decides it. On this
// project's Xeon a 512-bit FMA issues twice per cycle (170 GFLOP/s a core)
// while vdpbf16ps issues once every two (86: the bf16 dot is half the
// float32 rate here, not twice), and the small-M kernels spend a shuffle and
// a shift of W (on the FMA ports) for every 4 rows of x. Here W is widened
// once per panel and reused by every row of x, and the inner loop is loads
// and FMAs only. On AVX-512 the register block is 12 rows of x × 32 columns
// (24 of the 32 registers), on AVX2 6 × 16 (12 of 16).
#include "kernels/cpu/gemm_bf16_packed.h"

#include <immintrin.h>

#include <algorithm>
#include <new>
#include <string>
#include <vector>

#include "kernels/dtype.h"

namespace kvserve::cpu {
namespace {

// A thread's buffer, 64-byte aligned (a vector load never splits a line).
struct Buffer {
  float* data = nullptr;
  size_t size = 0;
  void Reserve(size_t n) {
    if (n <= size) return;
    ::operator delete[](data, std::align_val_t(64));
    data = static_cast<float*>(::operator new[](sizeof(float) * n, std::align_val_t(64)));
    size = n;
  }
  ~Buffer() { ::operator delete[](data, std::align_val_t(64)); }
};

#if defined(__clang__)  // the fuzz build (docs/testing.md)
#pragma clang attribute push(__attribute__((target("avx512f"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f")
#endif
namespace avx512 {
struct Ops {
  using V = __m512;
  static constexpr int kLanes = 16, kMR = 12;
  // The zero-masked forms with every lane kept: GCC 12's plain ones start
  // from an undefined vector and trip -Wmaybe-uninitialized (see
  // gemm_small_m.cc).
  static constexpr __mmask16 kAll = 0xffff;
  static __mmask16 First(int n) { return n >= 16 ? kAll : static_cast<__mmask16>((1u << n) - 1); }
  static V Zero() { return _mm512_setzero_ps(); }
  static V Load(const float* p) { return _mm512_load_ps(p); }
  static void Store(float* p, V v) { _mm512_store_ps(p, v); }
  static V Broadcast(const float* p) { return _mm512_set1_ps(*p); }
  static V Fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V LoadPart(const float* p, int n) { return _mm512_maskz_loadu_ps(First(n), p); }
  static void StorePart(float* p, V v, int n) { _mm512_mask_storeu_ps(p, First(n), v); }
  static V LoadBf16(const uint16_t* p) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    return _mm512_castsi512_ps(_mm512_maskz_slli_epi32(kAll, _mm512_maskz_cvtepu16_epi32(kAll, h), 16));
  }
  // r[i] lane c → out[c] lane i: unpacks within 128-bit lanes, then whole
  // lanes moved twice.
  static void Transpose(const V r[16], V out[16]) {
    V t[16], u[16];
    for (int i = 0; i < 16; i += 2) {  // per lane: [a0 b0 a1 b1], [a2 b2 a3 b3]
      t[i] = _mm512_maskz_unpacklo_ps(kAll, r[i], r[i + 1]);
      t[i + 1] = _mm512_maskz_unpackhi_ps(kAll, r[i], r[i + 1]);
    }
    for (int q = 0; q < 4; ++q) {  // u[4q + c] lane L: element 4L + c of rows 4q .. 4q + 3
      u[4 * q + 0] = _mm512_maskz_shuffle_ps(kAll, t[4 * q], t[4 * q + 2], 0x44);
      u[4 * q + 1] = _mm512_maskz_shuffle_ps(kAll, t[4 * q], t[4 * q + 2], 0xEE);
      u[4 * q + 2] = _mm512_maskz_shuffle_ps(kAll, t[4 * q + 1], t[4 * q + 3], 0x44);
      u[4 * q + 3] = _mm512_maskz_shuffle_ps(kAll, t[4 * q + 1], t[4 * q + 3], 0xEE);
    }
    for (int c = 0; c < 4; ++c) {  // lane L of the four quads → column 4L + c
      const V x0 = _mm512_maskz_shuffle_f32x4(kAll, u[c], u[4 + c], 0x88);
      const V x1 = _mm512_maskz_shuffle_f32x4(kAll, u[c], u[4 + c], 0xDD);
      const V y0 = _mm512_maskz_shuffle_f32x4(kAll, u[8 + c], u[12 + c], 0x88);
      const V y1 = _mm512_maskz_shuffle_f32x4(kAll, u[8 + c], u[12 + c], 0xDD);
      out[c] = _mm512_maskz_shuffle_f32x4(kAll, x0, y0, 0x88);
      out[4 + c] = _mm512_maskz_shuffle_f32x4(kAll, x1, y1, 0x88);
      out[8 + c] = _mm512_maskz_shuffle_f32x4(kAll, x0, y0, 0xDD);
      out[12 + c] = _mm512_maskz_shuffle_f32x4(kAll, x1, y1, 0xDD);
    }
  }
};
#include "kernels/cpu/gemm_bf16_packed_kernel.inc"
}  // namespace avx512
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#endif
namespace avx2 {
struct Ops {
  using V = __m256;
  static constexpr int kLanes = 8, kMR = 6;
  static __m256i First(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static V Zero() { return _mm256_setzero_ps(); }
  static V Load(const float* p) { return _mm256_load_ps(p); }
  static void Store(float* p, V v) { _mm256_store_ps(p, v); }
  static V Broadcast(const float* p) { return _mm256_broadcast_ss(p); }
  static V Fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V LoadPart(const float* p, int n) {
    return n >= 8 ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, First(n));
  }
  static void StorePart(float* p, V v, int n) {
    if (n >= 8) return _mm256_storeu_ps(p, v);
    _mm256_maskstore_ps(p, First(n), v);
  }
  static V LoadBf16(const uint16_t* p) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
  // r[i] lane c → out[c] lane i: unpacks and shuffles within 128-bit lanes,
  // then the halves exchanged.
  static void Transpose(const V r[8], V out[8]) {
    V t[8], s[8];
    for (int i = 0; i < 8; i += 2) {
      t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
      t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int h = 0; h < 8; h += 4) {  // s[h + c] half L: element 4L + c of rows h .. h + 3
      s[h + 0] = _mm256_shuffle_ps(t[h], t[h + 2], 0x44);
      s[h + 1] = _mm256_shuffle_ps(t[h], t[h + 2], 0xEE);
      s[h + 2] = _mm256_shuffle_ps(t[h + 1], t[h + 3], 0x44);
      s[h + 3] = _mm256_shuffle_ps(t[h + 1], t[h + 3], 0xEE);
    }
    for (int c = 0; c < 4; ++c) {
      out[c] = _mm256_permute2f128_ps(s[c], s[4 + c], 0x20);
      out[4 + c] = _mm256_permute2f128_ps(s[c], s[4 + c], 0x31);
    }
  }
};
#include "kernels/cpu/gemm_bf16_packed_kernel.inc"
}  // namespace avx2
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

// AVX2 takes over from sgemm over converted panels, not from its small-M
// kernel (gemm_small_m_bf16_avx2.h, panelled from 20 rows), which measured
// 1.4-1.7x the packed one at 16-64 rows on the build VM running AVX2 code;
// against sgemm it measured 0.94x at 65 rows (sgemm given W already
// converted, which the backend's path is not), 1.18x at 128, 1.88x at 512
// (docs/cpu_small_m_gemm.md).
constexpr int kAvx2FromRows = 65;
// AVX-512 from 32 rows: 1.09-1.19x its small-M kernel there, 0.84-1.17x at
// 16-24 (docs/cpu_small_m_gemm.md).
constexpr int kAvx512FromRows = 32;

using ProductFn = void (*)(const float*, int, int64_t, const uint16_t*, int, int, int, float*,
                           int64_t);
struct Choice {
  const char* isa;
  ProductFn product;
  int from_rows;  // where Linear switches to it from the small-M kernel (measured)
};

// Every variant this CPU runs, best first.
std::vector<Choice> Runnable() {
  __builtin_cpu_init();
  std::vector<Choice> out;
  if (__builtin_cpu_supports("avx512f")) out.push_back({"avx512f", avx512::Product, kAvx512FromRows});
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    out.push_back({"avx2+fma", avx2::Product, kAvx2FromRows});
  }
  return out;
}

const std::vector<Choice>& AllRunnable() {
  static const std::vector<Choice> all = Runnable();
  return all;
}

}  // namespace

bool PackedBf16Supported() { return !AllRunnable().empty(); }

int PackedBf16FromRows() { return AllRunnable().front().from_rows; }

void PackedBf16Product(const float* x, int m, int64_t ldx, const uint16_t* w, int k, int n_begin,
                       int n_end, float* y, int64_t ldy) {
  AllRunnable().front().product(x, m, ldx, w, k, n_begin, n_end, y, ldy);
}

std::vector<std::string> PackedBf16RunnableIsas() {
  std::vector<std::string> out;
  for (const Choice& c : AllRunnable()) out.push_back(c.isa);
  return out;
}

void PackedBf16ProductWithIsa(absl::string_view isa, const float* x, int m, int64_t ldx,
                              const uint16_t* w, int k, int n_begin, int n_end, float* y,
                              int64_t ldy) {
  for (const Choice& c : AllRunnable()) {
    if (c.isa == isa) return c.product(x, m, ldx, w, k, n_begin, n_end, y, ldy);
  }
}

}  // namespace kvserve::cpu
