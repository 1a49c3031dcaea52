// The packed bf16 product (gemm_bf16_packed.h), compiled for AVX-512F with a
// target pragma and chosen at run time (the build never uses -march=native).
//
// Why a packed kernel: with hundreds of rows of x the product is compute
// bound, and on this project's Xeon a 512-bit FMA issues twice per cycle
// (170 GFLOP/s a core) while vdpbf16ps issues once every two (86: the bf16
// dot is half the float32 rate here, not twice), and the small-M kernel
// spends a shuffle and a shift of W for every 4 rows of x. So W is widened
// to float32 once per panel of 32 rows × kDepth values, laid out [p][32]
// (value p of the 32 rows in two vectors), and a 12 × 32 block of outputs
// is 24 accumulators: per p two panel loads, twelve broadcasts of x (loads,
// no shuffle port) and 24 FMAs. The panel (32 KiB) stays in L1 while every
// row of x runs against it; x's rows for one depth block (m · kDepth floats)
// stay in L2.
#include "kernels/cpu/gemm_bf16_packed.h"

#include <immintrin.h>

#include <algorithm>
#include <new>

#include "kernels/dtype.h"

namespace kvserve::cpu {
namespace {

#if defined(__clang__)  // the fuzz build (docs/testing.md)
#pragma clang attribute push(__attribute__((target("avx512f"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f")
#endif

constexpr int kNR = 32;      // rows of W per panel: two vectors of outputs
constexpr int kMR = 12;      // rows of x per register block (24 accumulators)
constexpr int kDepth = 256;  // values of k per panel: 32 KiB of float32

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

// x's rows [0, m) over values [p0, p0 + depth) as blocks of kMR rows laid
// out [p][kMR] (rows past m zero), so a block's broadcasts read one
// contiguous stream: packed[(r / kMR) · depth · kMR + p · kMR + r % kMR].
void PackX(const float* x, int m, int64_t ldx, int p0, int depth, float* packed) {
  for (int r0 = 0; r0 < m; r0 += kMR) {
    float* out = packed + int64_t(r0 / kMR) * depth * kMR;
    for (int i = 0; i < kMR; ++i) {
      const int r = r0 + i;
      if (r < m) {
        const float* row = x + r * ldx + p0;
        for (int p = 0; p < depth; ++p) out[p * kMR + i] = row[p];
      } else {
        for (int p = 0; p < depth; ++p) out[p * kMR + i] = 0.f;
      }
    }
  }
}

// The zero-masked forms with every lane kept: GCC 12's plain ones start from
// an undefined vector and trip -Wmaybe-uninitialized (see gemm_small_m.cc).
constexpr __mmask16 kAll = 0xffff;

// r[i] lane c → out[c] lane i: a 16 × 16 transpose of floats (unpacks
// within 128-bit lanes, then whole lanes moved twice).
inline void Transpose16(const __m512 r[16], __m512 out[16]) {
  __m512 t[16], u[16];
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
    const __m512 x0 = _mm512_maskz_shuffle_f32x4(kAll, u[c], u[4 + c], 0x88);
    const __m512 x1 = _mm512_maskz_shuffle_f32x4(kAll, u[c], u[4 + c], 0xDD);
    const __m512 y0 = _mm512_maskz_shuffle_f32x4(kAll, u[8 + c], u[12 + c], 0x88);
    const __m512 y1 = _mm512_maskz_shuffle_f32x4(kAll, u[8 + c], u[12 + c], 0xDD);
    out[c] = _mm512_maskz_shuffle_f32x4(kAll, x0, y0, 0x88);
    out[4 + c] = _mm512_maskz_shuffle_f32x4(kAll, x1, y1, 0x88);
    out[8 + c] = _mm512_maskz_shuffle_f32x4(kAll, x0, y0, 0xDD);
    out[12 + c] = _mm512_maskz_shuffle_f32x4(kAll, x1, y1, 0xDD);
  }
}

// panel[p · 32 + j] = w[j, p0 + p] for p < depth, j < rows; zero for j ≥ rows.
// 16 rows × 16 values at a time: widened (a zero extension and a shift) and
// transposed in registers; a scalar loop packed 2-3x slower, which at 64-96
// rows of x cost a third of the product.
void Pack(const uint16_t* w, int k, int rows, int p0, int depth, float* panel) {
  const int depth16 = depth / 16 * 16;
  for (int j0 = 0; j0 < kNR; j0 += 16) {
    for (int p = 0; p < depth16; p += 16) {
      __m512 r[16], out[16];
      for (int i = 0; i < 16; ++i) {
        if (j0 + i >= rows) {
          r[i] = _mm512_setzero_ps();
          continue;
        }
        const __m256i h = _mm256_loadu_si256(
            reinterpret_cast<const __m256i*>(w + int64_t(j0 + i) * k + p0 + p));
        r[i] = _mm512_castsi512_ps(_mm512_maskz_slli_epi32(kAll, _mm512_maskz_cvtepu16_epi32(kAll, h), 16));
      }
      Transpose16(r, out);
      for (int c = 0; c < 16; ++c) _mm512_store_ps(panel + (p + c) * kNR + j0, out[c]);
    }
  }
  for (int j = 0; j < kNR; ++j) {
    const uint16_t* row = w + int64_t(j) * k + p0;
    for (int p = depth16; p < depth; ++p) panel[p * kNR + j] = j < rows ? BFloat16ToFloat(row[p]) : 0.f;
  }
}

// MR rows of x against the panel, over `depth` values; y's 32 columns
// (`lo`, `hi`: which of each 16 are stored) added to when `accumulate`.
template <int MR>
void Block(const float* xp, const float* panel, int depth, float* y, int64_t ldy,
           __mmask16 lo, __mmask16 hi, bool accumulate) {
  __m512 acc[MR][2];
  for (int r = 0; r < MR; ++r) {
    acc[r][0] = accumulate ? _mm512_maskz_loadu_ps(lo, y + r * ldy) : _mm512_setzero_ps();
    acc[r][1] = accumulate ? _mm512_maskz_loadu_ps(hi, y + r * ldy + 16) : _mm512_setzero_ps();
  }
  for (int p = 0; p < depth; ++p) {
    const __m512 w0 = _mm512_load_ps(panel + p * kNR), w1 = _mm512_load_ps(panel + p * kNR + 16);
    for (int r = 0; r < MR; ++r) {
      const __m512 xv = _mm512_set1_ps(xp[p * kMR + r]);
      acc[r][0] = _mm512_fmadd_ps(xv, w0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(xv, w1, acc[r][1]);
    }
  }
  for (int r = 0; r < MR; ++r) {
    _mm512_mask_storeu_ps(y + r * ldy, lo, acc[r][0]);
    _mm512_mask_storeu_ps(y + r * ldy + 16, hi, acc[r][1]);
  }
}

// The last rows of x, fewer than kMR.
void Remainder(int rows, const float* xp, const float* panel, int depth, float* y,
               int64_t ldy, __mmask16 lo, __mmask16 hi, bool accumulate) {
  switch (rows) {
#define KVSERVE_REMAINDER(R) \
  case R: return Block<R>(xp, panel, depth, y, ldy, lo, hi, accumulate);
    KVSERVE_REMAINDER(1)
    KVSERVE_REMAINDER(2)
    KVSERVE_REMAINDER(3)
    KVSERVE_REMAINDER(4)
    KVSERVE_REMAINDER(5)
    KVSERVE_REMAINDER(6)
    KVSERVE_REMAINDER(7)
    KVSERVE_REMAINDER(8)
    KVSERVE_REMAINDER(9)
    KVSERVE_REMAINDER(10)
    KVSERVE_REMAINDER(11)
#undef KVSERVE_REMAINDER
    default: return;
  }
}

void Product(const float* x, int m, int64_t ldx, const uint16_t* w, int k, int n_begin, int n_end,
             float* y, int64_t ldy) {
  thread_local Buffer panel, xp;
  panel.Reserve(size_t(kNR) * kDepth);
  xp.Reserve(size_t(m + kMR) * kDepth);
  for (int p0 = 0; p0 < k; p0 += kDepth) {
    const int depth = std::min(kDepth, k - p0);
    PackX(x, m, ldx, p0, depth, xp.data);
    for (int j0 = n_begin; j0 < n_end; j0 += kNR) {
      const int rows = std::min(kNR, n_end - j0);
      Pack(w + int64_t(j0) * k, k, rows, p0, depth, panel.data);
      const __mmask16 lo = rows >= 16 ? 0xffff : static_cast<__mmask16>((1u << rows) - 1);
      const __mmask16 hi =
          rows >= 32 ? 0xffff : rows <= 16 ? 0 : static_cast<__mmask16>((1u << (rows - 16)) - 1);
      const bool accumulate = p0 > 0;
      int r = 0;
      for (; r + kMR <= m; r += kMR) {
        Block<kMR>(xp.data + int64_t(r) * depth, panel.data, depth, y + r * ldy + j0, ldy, lo,
                   hi, accumulate);
      }
      Remainder(m - r, xp.data + int64_t(r) * depth, panel.data, depth, y + r * ldy + j0, ldy,
                lo, hi, accumulate);
    }
  }
}

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

}  // namespace

bool PackedBf16Supported() {
  static const bool supported = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") != 0;
  }();
  return supported;
}

void PackedBf16Product(const float* x, int m, int64_t ldx, const uint16_t* w, int k, int n_begin,
                       int n_end, float* y, int64_t ldy) {
  Product(x, m, ldx, w, k, n_begin, n_end, y, ldy);
}

}  // namespace kvserve::cpu
