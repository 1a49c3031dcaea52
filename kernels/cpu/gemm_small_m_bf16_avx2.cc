// The small-M product for bfloat16 W on AVX2 + FMA (gemm_small_m_bf16_avx2.h).
//
// Why not the shared kernel (gemm_small_m_kernel.inc): it widens 8 bf16
// weights to float32 with vpmovzxwd + vpslld, two shuffle/shift µops that on
// Zen 3 (and Intel's port 5) compete with the FMAs for the same pipes, so a
// batch-8 decode step ran at ~0.7 of the FMA rate. Here 16 weights come in
// one 256-bit load and are widened without a shuffle: the even elements by a
// shift left of each 32-bit lane (vpslld 16), the odd ones by a shift right
// and back (a vpand with a mask register measured 25% slower: the mask took
// the register the x vector needs). That puts the weights in [even | odd]
// order, so x is reordered the same way once per call (O(M·K), against the
// product's O(M·N·K)). Products and sums are exact float32 FMAs of the
// stored weights' values; only the summation order differs from the
// reference, as in the shared kernel.
//
// Registers (16): 3 rows of W × 4 rows of x = 12 accumulators, 3 widened W
// vectors and one x vector; 24 FMAs per 9 shifts and 6 loads of W (each row
// loaded once per half, from L1). With many rows of x (kPanelFromRows) the
// shifts are paid once per row of W instead: its 3 rows are widened into a
// float32 panel and each 4 rows of x multiply it with loads and FMAs only.
// docs/cpu_small_m_gemm.md has the numbers.
#include "kernels/cpu/gemm_small_m_bf16_avx2.h"

#include <immintrin.h>

#include <new>
#include <vector>

#include "kernels/dtype.h"

namespace kvserve::cpu::avx2_bf16 {
namespace {

#if defined(__clang__)  // the fuzz build (docs/testing.md)
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#endif

constexpr int kStep = 16;  // bf16 weights per 256-bit load
// From this many rows of x on, each 3 rows of W are widened once into a
// float32 panel (WidenRows) instead of once per 4 rows of x. Measured
// (docs/cpu_small_m_gemm.md): 0.85x at 8 rows, 0.90-0.93x at 12, 0.95-1.02x
// at 16, 1.04-1.06x at 20, 1.06-1.10x at 24-32, 1.23-1.26x at 48-64.
// A -D override is for such A/B runs.
#ifndef KVSERVE_BF16_PANEL_FROM_ROWS
#define KVSERVE_BF16_PANEL_FROM_ROWS 20
#endif
constexpr int kPanelFromRows = KVSERVE_BF16_PANEL_FROM_ROWS;

template <typename T>
struct AlignedAllocator {
  using value_type = T;
  AlignedAllocator() = default;
  template <typename U>
  explicit AlignedAllocator(const AlignedAllocator<U>&) {}
  T* allocate(size_t n) {
    return static_cast<T*>(::operator new (n * sizeof(T), std::align_val_t{64}));
  }
  void deallocate(T* p, size_t) { ::operator delete (p, std::align_val_t{64}); }
  bool operator==(const AlignedAllocator&) const { return true; }
};

// out[r, :k16] = x[r, :k16] with each group of 16 reordered to the 8 even
// elements then the 8 odd ones (the order the widened W vectors hold).
void Reorder(const float* x, int m, int64_t ldx, int k16, float* out) {
  for (int r = 0; r < m; ++r) {
    const float* in = x + r * ldx;
    float* o = out + int64_t(r) * k16;
    for (int i = 0; i < k16; i += kStep) {
      const __m256 a = _mm256_loadu_ps(in + i), b = _mm256_loadu_ps(in + i + 8);
      // Per 128-bit half: [a0 a2 b0 b2 | a4 a6 b4 b6]; the 64-bit permute
      // puts the halves' pairs in order: [a0 a2 a4 a6 b0 b2 b4 b6].
      const __m256 even = _mm256_shuffle_ps(a, b, 0x88), odd = _mm256_shuffle_ps(a, b, 0xdd);
      _mm256_storeu_ps(o + i,
                       _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(even), 0xd8)));
      _mm256_storeu_ps(o + i + 8,
                       _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(odd), 0xd8)));
    }
  }
}

float Sum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// NR rows of W × MR rows of x over the first k16 columns. xr: x's rows
// reordered (row stride k16). The next NR rows of W (the next call's) are
// prefetched a cache line per row per 32 weights, as the shared kernel does:
// a decode step streams W from memory.
template <int NR, int MR>
void Block(const float* xr, int k16, const uint16_t* w, int k, float* y, int64_t ldy) {
  __m256 acc[MR][NR];
  for (int r = 0; r < MR; ++r)
    for (int j = 0; j < NR; ++j) acc[r][j] = _mm256_setzero_ps();
  for (int i = 0; i < k16; i += kStep) {
    if (i % 32 == 0) {
      for (int j = 0; j < NR; ++j) __builtin_prefetch(w + int64_t(NR + j) * k + i, 0, 3);
    }
    __m256 wv[NR];
    for (int j = 0; j < NR; ++j) {
      const __m256i v =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + int64_t(j) * k + i));
      wv[j] = _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
    }
    for (int r = 0; r < MR; ++r) {
      const __m256 xv = _mm256_loadu_ps(xr + int64_t(r) * k16 + i);
      for (int j = 0; j < NR; ++j) acc[r][j] = _mm256_fmadd_ps(xv, wv[j], acc[r][j]);
    }
    for (int j = 0; j < NR; ++j) {
      const __m256i v =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + int64_t(j) * k + i));
      wv[j] = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_srli_epi32(v, 16), 16));
    }
    for (int r = 0; r < MR; ++r) {
      const __m256 xv = _mm256_loadu_ps(xr + int64_t(r) * k16 + i + 8);
      for (int j = 0; j < NR; ++j) acc[r][j] = _mm256_fmadd_ps(xv, wv[j], acc[r][j]);
    }
  }
  for (int r = 0; r < MR; ++r)
    for (int j = 0; j < NR; ++j) y[r * ldy + j] = Sum(acc[r][j]);
}

// NR rows of W widened once into `panel` (row j at j · k16, in the [even |
// odd] order Block's shifts give), for the blocks of x that follow.
template <int NR>
void WidenRows(const uint16_t* w, int k, int k16, float* panel) {
  for (int j = 0; j < NR; ++j) {
    const uint16_t* row = w + int64_t(j) * k;
    float* out = panel + int64_t(j) * k16;
    for (int i = 0; i < k16; i += kStep) {
      if (i % 32 == 0) __builtin_prefetch(row + int64_t(NR) * k + i, 0, 3);
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + i));
      _mm256_store_ps(out + i, _mm256_castsi256_ps(_mm256_slli_epi32(v, 16)));
      _mm256_store_ps(out + i + 8,
                      _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_srli_epi32(v, 16), 16)));
    }
  }
}

// Block's product with W already widened: FMAs and loads only.
template <int NR, int MR>
void PanelBlock(const float* xr, int k16, const float* panel, float* y, int64_t ldy) {
  __m256 acc[MR][NR];
  for (int r = 0; r < MR; ++r)
    for (int j = 0; j < NR; ++j) acc[r][j] = _mm256_setzero_ps();
  for (int i = 0; i < k16; i += 8) {
    __m256 wv[NR];
    for (int j = 0; j < NR; ++j) wv[j] = _mm256_load_ps(panel + int64_t(j) * k16 + i);
    for (int r = 0; r < MR; ++r) {
      const __m256 xv = _mm256_load_ps(xr + int64_t(r) * k16 + i);
      for (int j = 0; j < NR; ++j) acc[r][j] = _mm256_fmadd_ps(xv, wv[j], acc[r][j]);
    }
  }
  for (int r = 0; r < MR; ++r)
    for (int j = 0; j < NR; ++j) y[r * ldy + j] = Sum(acc[r][j]);
}

// All m rows of x against NR rows of W, 4 rows of x at a time; the NR rows
// of W stay in L1/L2 between the passes, so memory sees them once.
template <int NR>
void RowsOfW(const float* xr, int m, int k16, const uint16_t* w, int k, float* y, int64_t ldy) {
  int r = 0;
  if (m >= kPanelFromRows) {
    thread_local std::vector<float, AlignedAllocator<float>> panel;
    panel.resize(size_t(NR) * k16);
    WidenRows<NR>(w, k, k16, panel.data());
    for (; r + 4 <= m; r += 4)
      PanelBlock<NR, 4>(xr + int64_t(r) * k16, k16, panel.data(), y + r * ldy, ldy);
  }
  for (; r + 4 <= m; r += 4) Block<NR, 4>(xr + int64_t(r) * k16, k16, w, k, y + r * ldy, ldy);
  const float* xt = xr + int64_t(r) * k16;
  float* yt = y + r * ldy;
  switch (m - r) {
    case 3:
      Block<NR, 3>(xt, k16, w, k, yt, ldy);
      break;
    case 2:
      Block<NR, 2>(xt, k16, w, k, yt, ldy);
      break;
    case 1:
      Block<NR, 1>(xt, k16, w, k, yt, ldy);
      break;
    default:
      break;
  }
}

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

}  // namespace

void ProductBf16(const float* x, int m, int64_t ldx, const void* weights, int k, int n_begin,
                 int n_end, float* y, int64_t ldy) {
  const auto* w = static_cast<const uint16_t*>(weights);
  const int k16 = k / kStep * kStep;
  // Per calling thread (each pool thread reorders x for its own share):
  // ≤ 64 rows × K floats, 64-byte aligned (a 32-byte load that crosses a
  // cache line costs two; aligning it measured 20 → 23-25 GMAC/s).
  thread_local std::vector<float, AlignedAllocator<float>> reordered;
  reordered.resize(size_t(m) * k16);
  Reorder(x, m, ldx, k16, reordered.data());
  constexpr int kRowsOfW = 3;
  const float* xr = reordered.data();
  int j = n_begin;
  for (; j + kRowsOfW <= n_end; j += kRowsOfW)
    RowsOfW<kRowsOfW>(xr, m, k16, w + int64_t(j) * k, k, y + j, ldy);
  for (; j < n_end; ++j) RowsOfW<1>(xr, m, k16, w + int64_t(j) * k, k, y + j, ldy);
  // The k % 16 tail (all of a row shorter than 16), in plain float32.
  if (k16 == k) return;
  for (int r = 0; r < m; ++r) {
    for (int c = n_begin; c < n_end; ++c) {
      float sum = y[r * ldy + c];
      for (int t = k16; t < k; ++t) sum += x[r * ldx + t] * BFloat16ToFloat(w[int64_t(c) * k + t]);
      y[r * ldy + c] = sum;
    }
  }
}

}  // namespace kvserve::cpu::avx2_bf16
