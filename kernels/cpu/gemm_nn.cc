// ProductNN (gemm_nn.h): a register block of 6 rows × 2 vectors of columns
// (12 accumulators: per step of k, 2 vectors of B and 6 broadcasts of A feed
// 12 multiply-adds) in AVX-512 (32 columns) and AVX2 + FMA (16 columns),
// chosen at run time, and a plain loop for other CPUs. The plain loop ran a
// quarter of a Q4_0 prefill on Zen 3 before the AVX2 block.
#include "kernels/cpu/gemm_nn.h"

#include <immintrin.h>

#include <algorithm>

namespace kvserve::cpu {
namespace {

// The fallback, in an order the compiler vectorizes (j innermost).
void PortableNN(const float* a, int64_t lda, const float* b, int64_t ldb, int m, int k, int n,
                float* c, int64_t ldc) {
  for (int r = 0; r < m; ++r) {
    float* cr = c + r * ldc;
    std::fill(cr, cr + n, 0.f);
    for (int i = 0; i < k; ++i) {
      const float ari = a[r * lda + i];
      const float* bi = b + i * ldb;
      for (int j = 0; j < n; ++j) cr[j] += ari * bi[j];
    }
  }
}

// One instruction set's register block of MR rows (index MR, 1-6) × NR
// columns, the first `cols` stored.
using BlockFn = void (*)(const float*, int64_t, const float*, int64_t, int, int, float*, int64_t);
constexpr int kBlockRows = 6;

// Column blocks outside, so a strip of B (k × NR floats) stays in L1 while
// every block of rows runs against it; called from each instruction set's
// NN with its blocks (calls, not inlined: each block runs k steps).
void ForEachBlock(const BlockFn (&block)[kBlockRows + 1], int nr, const float* a, int64_t lda,
                  const float* b, int64_t ldb, int m, int k, int n, float* c, int64_t ldc) {
  for (int j = 0; j < n; j += nr) {
    const int cols = std::min(nr, n - j);
    for (int r = 0; r < m; r += kBlockRows) {
      block[std::min(kBlockRows, m - r)](a + r * lda, lda, b + j, ldb, k, cols, c + r * ldc + j, ldc);
    }
  }
}

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,fma")
#endif
namespace avx512 {

constexpr int kNR = 32;

// Rows r .. r + MR - 1 of C, columns j .. j + 31 (the first `cols` stored).
template <int MR>
void Block(const float* a, int64_t lda, const float* b, int64_t ldb, int k, int cols, float* c,
           int64_t ldc) {
  const __mmask16 m0 = cols >= 16 ? 0xffff : static_cast<__mmask16>((1u << cols) - 1);
  const __mmask16 m1 = cols >= 32 ? 0xffff : cols <= 16 ? 0 : static_cast<__mmask16>((1u << (cols - 16)) - 1);
  __m512 acc[MR][2];
  for (int r = 0; r < MR; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  for (int i = 0; i < k; ++i) {
    const __m512 b0 = _mm512_maskz_loadu_ps(m0, b + i * ldb);
    const __m512 b1 = _mm512_maskz_loadu_ps(m1, b + i * ldb + 16);
    for (int r = 0; r < MR; ++r) {
      const __m512 ar = _mm512_set1_ps(a[r * lda + i]);
      acc[r][0] = _mm512_fmadd_ps(ar, b0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(ar, b1, acc[r][1]);
    }
  }
  for (int r = 0; r < MR; ++r) {
    _mm512_mask_storeu_ps(c + r * ldc, m0, acc[r][0]);
    _mm512_mask_storeu_ps(c + r * ldc + 16, m1, acc[r][1]);
  }
}

void NN(const float* a, int64_t lda, const float* b, int64_t ldb, int m, int k, int n, float* c,
        int64_t ldc) {
  static constexpr BlockFn kBlocks[] = {nullptr, Block<1>, Block<2>, Block<3>, Block<4>, Block<5>, Block<6>};
  ForEachBlock(kBlocks, kNR, a, lda, b, ldb, m, k, n, c, ldc);
}

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

constexpr int kNR = 16;

// Lanes below `count` (0-8) set: maskload / maskstore's mask.
static inline __m256i FirstLanes(int count) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(count), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// Rows r .. r + MR - 1 of C, columns j .. j + 15 (the first `cols` stored).
template <int MR>
void Block(const float* a, int64_t lda, const float* b, int64_t ldb, int k, int cols, float* c,
           int64_t ldc) {
  const __m256i m0 = FirstLanes(std::min(cols, 8)), m1 = FirstLanes(std::max(cols - 8, 0));
  __m256 acc[MR][2];
  for (int r = 0; r < MR; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  if (cols == kNR) {  // whole blocks: plain loads
    for (int i = 0; i < k; ++i) {
      const __m256 b0 = _mm256_loadu_ps(b + i * ldb), b1 = _mm256_loadu_ps(b + i * ldb + 8);
      for (int r = 0; r < MR; ++r) {
        const __m256 ar = _mm256_broadcast_ss(a + r * lda + i);
        acc[r][0] = _mm256_fmadd_ps(ar, b0, acc[r][0]);
        acc[r][1] = _mm256_fmadd_ps(ar, b1, acc[r][1]);
      }
    }
  } else {
    for (int i = 0; i < k; ++i) {
      const __m256 b0 = _mm256_maskload_ps(b + i * ldb, m0), b1 = _mm256_maskload_ps(b + i * ldb + 8, m1);
      for (int r = 0; r < MR; ++r) {
        const __m256 ar = _mm256_broadcast_ss(a + r * lda + i);
        acc[r][0] = _mm256_fmadd_ps(ar, b0, acc[r][0]);
        acc[r][1] = _mm256_fmadd_ps(ar, b1, acc[r][1]);
      }
    }
  }
  for (int r = 0; r < MR; ++r) {
    _mm256_maskstore_ps(c + r * ldc, m0, acc[r][0]);
    _mm256_maskstore_ps(c + r * ldc + 8, m1, acc[r][1]);
  }
}

void NN(const float* a, int64_t lda, const float* b, int64_t ldb, int m, int k, int n, float* c,
        int64_t ldc) {
  static constexpr BlockFn kBlocks[] = {nullptr, Block<1>, Block<2>, Block<3>, Block<4>, Block<5>, Block<6>};
  ForEachBlock(kBlocks, kNR, a, lda, b, ldb, m, k, n, c, ldc);
}

}  // namespace avx2
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

using NNFn = void (*)(const float*, int64_t, const float*, int64_t, int, int, int, float*, int64_t);
struct Choice {
  const char* isa;
  NNFn fn;
};

const std::vector<Choice>& Runnable() {
  static const std::vector<Choice> all = [] {
    std::vector<Choice> out;
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) out.push_back({"avx512f", avx512::NN});
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) out.push_back({"avx2", avx2::NN});
    out.push_back({"portable", PortableNN});
    return out;
  }();
  return all;
}

}  // namespace

void ProductNN(const float* a, int64_t lda, const float* b, int64_t ldb, int m, int k, int n,
               float* c, int64_t ldc) {
  Runnable().front().fn(a, lda, b, ldb, m, k, n, c, ldc);
}

std::vector<std::string> ProductNNRunnableIsas() {
  std::vector<std::string> out;
  for (const Choice& choice : Runnable()) out.push_back(choice.isa);
  return out;
}

void ProductNNWithIsa(absl::string_view isa, const float* a, int64_t lda, const float* b,
                      int64_t ldb, int m, int k, int n, float* c, int64_t ldc) {
  for (const Choice& choice : Runnable()) {
    if (choice.isa == isa) return choice.fn(a, lda, b, ldb, m, k, n, c, ldc);
  }
}

}  // namespace kvserve::cpu
