// The quantized product compiled three times: AVX-512 VNNI (vpdpbusd:
// unsigned codes × signed activations, 64 per instruction), AVX2 (pmaddubsw:
// unsigned codes × signed activations in 16-bit pairs; Q8_0's signed codes
// through llama.cpp's sign identity) and plain C++, chosen once at run time
// by CPUID. Target pragmas rather than
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
#include "kernels/quant/codes_avx2.inc"
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
#include "kernels/quant/x_groups.inc"
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
#include "kernels/quant/codes_avx2.inc"
#include "kernels/quant/unpack_blocks_avx2.inc"
#include "kernels/quant/tile.inc"
#include "kernels/quant/x_groups.inc"
#include "kernels/quant/fused_dot_avx2.inc"
#include "kernels/quant/panel_product_avx2.inc"
#include "kernels/quant/register_panel_avx2.inc"

// Which kernel serves m rows of x, by format, as measured in-process
// (tools/quant-product-ab.sh, one thread, n = k = 2048, Zen 3;
// docs/quantized_weights.md): the register panel (8 rows of W unpacked in
// registers per block, nothing stored) while it beats the stored panel,
// which is below 32 rows for Q4_0 / Q4_1 (1.1-1.5× at 16-24) and at every
// row count for Q4_K (1.3-1.5× at 16-32, still 1.02× at 512: its integer
// block sums); the stored panel (W unpacked once per call, shared by every
// row of x) from the row count where it passes the fused kernel: 4 for
// Q5_0 / Q5_1 (whose fifth bits the fused kernel rebuilds per row pair:
// 1.1× at 4 rows, 1.5-2× at 6-12), 4 for Q8_0 (its panel built straight
// from the file's blocks: 1.16× at 4, 1.4× at 5-6, 0.99× at 3), 10 for Q5_K
// (1.13×; 0.93× at 8), 16 for Q6_K (level at 12). Q2_K and Q3_K have no
// fused kernel yet and take the stored panel at every row count (as on
// AVX-512, where FusedServes leaves them to PanelProduct).
enum class Avx2Kernel { kFused, kRegisterPanel, kStoredPanel };

static Avx2Kernel Avx2KernelFor(DType dtype, int m) {
  const auto stored_from = [m](int rows) {
    return m >= rows ? Avx2Kernel::kStoredPanel : Avx2Kernel::kFused;
  };
  switch (dtype) {
    case DType::kQ4_K: return Avx2Kernel::kRegisterPanel;
    case DType::kQ4_0:
    case DType::kQ4_1: return m < 32 ? Avx2Kernel::kRegisterPanel : Avx2Kernel::kStoredPanel;
    case DType::kQ5_0:
    case DType::kQ5_1: return stored_from(4);
    case DType::kQ8_0: return stored_from(4);
    case DType::kQ5_K: return stored_from(10);
    case DType::kQ2_K:
    case DType::kQ3_K: return Avx2Kernel::kStoredPanel;
    default: return stored_from(kAvx2PanelMinRows);
  }
}

static void ProductOrPanel(const QuantizedActivations& a, const void* weights, int n_begin,
                           int n_end, float* y, int64_t ldy) {
  switch (Avx2KernelFor(a.weight_dtype, a.m)) {
    case Avx2Kernel::kStoredPanel: return PanelProduct(a, weights, n_begin, n_end, y, ldy);
    case Avx2Kernel::kFused: return Product(a, weights, n_begin, n_end, y, ldy);
    case Avx2Kernel::kRegisterPanel: break;
  }
  switch (a.weight_dtype) {
    case DType::kQ4_0: return RegisterPanelProductOf<DType::kQ4_0>(a, weights, n_begin, n_end, y, ldy);
    case DType::kQ4_1: return RegisterPanelProductOf<DType::kQ4_1>(a, weights, n_begin, n_end, y, ldy);
    default: return RegisterPanelProductOf<DType::kQ4_K>(a, weights, n_begin, n_end, y, ldy);
  }
}
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
    out.push_back({"avx2", avx2::ProductOrPanel});
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
