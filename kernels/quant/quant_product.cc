// The quantized product compiled three times: AVX-512 VNNI (vpdpbusd:
// unsigned codes × signed activations, 64 per instruction), AVX2 (llama.cpp's
// form: the codes made signed, |c| × sign-adjusted x with pmaddubsw) and
// plain C++, chosen once at run time by CPUID. Target pragmas rather than
// -march, so the binary runs on any x86-64 (see gemm_small_m.cc).
#include "kernels/quant/quant_product.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/quant/block_formats.h"

namespace kvserve {
namespace {

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")
#endif
namespace avx512vnni {
static inline float Half(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}
#include "kernels/quant/unpack_blocks.inc"
#include "kernels/quant/unpack_blocks_avx2.inc"

// Halving adds, the halves swapped by a shuffle (GCC 12's extract and reduce
// intrinsics trip -Wuninitialized, see gemm_small_m.cc).
static inline float Sum(__m512 v) {
  const __m512 swapped = _mm512_mask_shuffle_f32x4(v, 0xffff, v, v, 0x4e);  // 256-bit halves exchanged
  alignas(64) float folded[16];  // not _mm512_castps512_ps256: GCC 12 builds it on extract too
  _mm512_store_ps(folded, _mm512_add_ps(v, swapped));
  const __m256 half = _mm256_load_ps(folded);
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(half), _mm256_extractf128_ps(half, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

#include "kernels/quant/tile.inc"
#include "kernels/quant/group_sums_avx512.inc"
#include "kernels/quant/fused_dot_avx512.inc"
#include "kernels/quant/panel_product_avx512.inc"

static void ProductOrFused(const QuantizedActivations& a, const void* weights, int n_begin,
                           int n_end, float* y, int64_t ldy) {
  if (FusedServes(a)) return FusedProduct(a, weights, n_begin, n_end, y, ldy);
  PanelProduct(a, weights, n_begin, n_end, y, ldy);
}
}  // namespace avx512vnni
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#endif
namespace avx2 {
static inline float Half(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}
#include "kernels/quant/unpack_blocks.inc"
#include "kernels/quant/unpack_blocks_avx2.inc"
#include "kernels/quant/tile.inc"

constexpr int kMaxRowsOfW = 2, kMaxRowsOfX = 2;

// 32 codes per step. pmaddubsw multiplies unsigned by signed bytes and
// saturates pairs at 16 bits, so the codes are made signed (c = u - o, |c| ≤
// 128) and llama.cpp's identity c·x = |c| · (x with c's sign) keeps each pair
// within 2·128·127; pmaddwd by ones then gives the 8 lanes of 4.
template <int NR, int MR>
static void DotBlock(const UnpackedRow* w, const QuantizedActivations& a, int r,
                     const BlockFormat& format, float* y, int64_t ldy) {
  const int k = a.k;
  const __m256i offset = _mm256_set1_epi8(static_cast<char>(format.code_offset));
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[MR][NR];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) acc[i][j] = _mm256_setzero_ps();
  for (int c = 0; c < k; c += 32) {
    __m256i code[NR], magnitude[NR];
    __m256 ws[NR];
    for (int j = 0; j < NR; ++j) {
      code[j] = _mm256_sub_epi8(
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[j].u + c)), offset);
      magnitude[j] = _mm256_abs_epi8(code[j]);
      ws[j] = _mm256_loadu_ps(w[j].lane_scale + c / 4);
    }
    for (int i = 0; i < MR; ++i) {
      const __m256i xq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.q_row(r + i) + c));
      const __m256 xs = _mm256_loadu_ps(a.scale_row(r + i) + c / 4);
      for (int j = 0; j < NR; ++j) {
        const __m256i pairs = _mm256_maddubs_epi16(magnitude[j], _mm256_sign_epi8(xq, code[j]));
        const __m256i dot = _mm256_madd_epi16(pairs, ones);
        acc[i][j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_mul_ps(ws[j], xs), acc[i][j]);
      }
    }
  }
  for (int i = 0; i < MR; ++i) {
    for (int j = 0; j < NR; ++j) {
      __m128 s = _mm_add_ps(_mm256_castps256_ps128(acc[i][j]), _mm256_extractf128_ps(acc[i][j], 1));
      s = _mm_add_ps(s, _mm_movehl_ps(s, s));
      s = _mm_add_ss(s, _mm_movehdup_ps(s));
      y[i * ldy + j] = _mm_cvtss_f32(s);
    }
  }
}

#include "kernels/quant/quant_product_driver.inc"
}  // namespace avx2
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

namespace scalar {
static inline float Half(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return HalfToFloat(h);
}
#include "kernels/quant/unpack_blocks.inc"

static void Unpack(DType dtype, const uint8_t* row, int k, UnpackedRow out) {
  UnpackRow(dtype, row, k, out);
}

#include "kernels/quant/tile.inc"

constexpr int kMaxRowsOfW = 1, kMaxRowsOfX = 1;

// The reference: each lane's exact integer sum, scaled and added in order.
template <int NR, int MR>
static void DotBlock(const UnpackedRow* w, const QuantizedActivations& a, int r,
                     const BlockFormat& format, float* y, int64_t ldy) {
  for (int i = 0; i < MR; ++i) {
    const int8_t* q = a.q_row(r + i);
    const float* xs = a.scale_row(r + i);
    for (int j = 0; j < NR; ++j) {
      float sum = 0;
      for (int lane = 0; lane < a.k / 4; ++lane) {
        int dot = 0;
        for (int e = lane * 4; e < lane * 4 + 4; ++e) dot += (w[j].u[e] - format.code_offset) * q[e];
        sum += static_cast<float>(dot) * (w[j].lane_scale[lane] * xs[lane]);
      }
      y[i * ldy + j] = sum;
    }
  }
}

#include "kernels/quant/quant_product_driver.inc"
}  // namespace scalar

using ProductFn = void (*)(const QuantizedActivations&, const void*, int, int, float*, int64_t);
struct Choice {
  const char* isa;
  ProductFn product;
};

std::vector<Choice> Runnable() {
  __builtin_cpu_init();
  std::vector<Choice> out;
  if (__builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl")) {
    out.push_back({"avx512vnni", avx512vnni::ProductOrFused});
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    out.push_back({"avx2", avx2::Product});
  }
  out.push_back({"scalar", scalar::Product});
  return out;
}

const std::vector<Choice>& AllRunnable() {
  static const std::vector<Choice> all = Runnable();
  return all;
}

}  // namespace

const char* QuantProductIsa() { return AllRunnable().front().isa; }

void QuantProduct(const QuantizedActivations& a, const void* weights, int n_begin, int n_end,
                  float* y, int64_t ldy) {
  AllRunnable().front().product(a, weights, n_begin, n_end, y, ldy);
}

std::vector<std::string> QuantProductRunnableIsas() {
  std::vector<std::string> out;
  for (const Choice& c : AllRunnable()) out.push_back(c.isa);
  return out;
}

void QuantProductWithIsa(absl::string_view isa, const QuantizedActivations& a,
                         const void* weights, int n_begin, int n_end, float* y, int64_t ldy) {
  for (const Choice& c : AllRunnable()) {
    if (c.isa == isa) return c.product(a, weights, n_begin, n_end, y, ldy);
  }
}

}  // namespace kvserve
