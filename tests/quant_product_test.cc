// The quantized product (kernels/quant/) with every instruction set this CPU
// runs, for every block format, against a double-precision sum over the
// values the kernel multiplies: the weights as DequantizeBlocks gives them
// (checked bit for bit against gguf-py by gguf_dequant_test.py) and the
// activations as rounded (d · q). The activation rounding is checked against
// ggml's reference rules on its own.
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/dtype.h"
#include "kernels/quant/block_formats.h"
#include "kernels/quant/dequantize.h"
#include "kernels/quant/quant_product.h"
#include "kernels/quant/quantized_activations.h"
#include "tests/quant_test_util.h"

namespace kvserve {
namespace {

using testing::kBlockFormats;
using testing::RandomBlocks;

struct Case {
  DType dtype;
  int m, k, n;
};

// Activations like a normed hidden state, with a few outliers.
std::vector<float> RandomActivations(int m, int k, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<float> x(size_t(m) * k);
  for (float& v : x) v = normal(rng);
  for (size_t i = 0; i < x.size(); i += 97) x[i] *= 8;
  return x;
}

void CheckProduct(const Case& c, const std::string& isa, std::mt19937& rng) {
  SCOPED_TRACE(std::string(DTypeName(c.dtype)) + " " + isa + " m=" + std::to_string(c.m) +
               " k=" + std::to_string(c.k) + " n=" + std::to_string(c.n));
  const std::vector<uint8_t> w = RandomBlocks(c.dtype, c.n, c.k, rng);
  const std::vector<float> x = RandomActivations(c.m, c.k, rng);
  QuantizedActivations a;
  ResizeQuantizedActivations(c.dtype, c.m, c.k, &a);
  QuantizeActivationRows(x.data(), c.k, 0, c.m, &a);
  std::vector<float> wf(size_t(c.n) * c.k);
  DequantizeBlocks(c.dtype, w.data(), int64_t(c.n) * c.k / DTypeBlockElems(c.dtype), wf.data());
  // Two calls over column ranges that split the rows, as Linear's threads do.
  std::vector<float> y(size_t(c.m) * c.n, NAN);
  const int split = c.n / 3;
  QuantProductWithIsa(isa, a, w.data(), 0, split, y.data(), c.n);
  QuantProductWithIsa(isa, a, w.data(), split, c.n, y.data(), c.n);
  const double eps = std::ldexp(1.0, -24);
  for (int r = 0; r < c.m; ++r) {
    for (int j = 0; j < c.n; ++j) {
      double ref = 0, magnitude = 0;
      for (int i = 0; i < c.k; ++i) {
        const double xv = double(a.scale_row(r)[i / 4]) * a.q_row(r)[i];
        ref += double(wf[size_t(j) * c.k + i]) * xv;
        magnitude += std::fabs(double(wf[size_t(j) * c.k + i]) * xv);
      }
      // float32 accumulation over k / 4 lane sums plus the per-16 bias terms,
      // and the float rounding of each dequantized weight in the reference.
      const double bound = 2 * (c.k / 4.0 + c.k / 16.0 + 8) * eps * magnitude + 1e-30;
      ASSERT_NEAR(y[size_t(r) * c.n + j], ref, bound) << "row " << r << " column " << j;
    }
  }
}

TEST(QuantProductTest, EveryFormatAndInstructionSetMatchesTheDoubleSum) {
  std::mt19937 rng(7);
  const std::vector<std::string> isas = QuantProductRunnableIsas();
  ASSERT_EQ(isas.back(), "scalar");
  for (DType dtype : kBlockFormats) {
    const bool k_quant = BlockFormatOf(dtype).k_quant;
    // k: one block, an odd number of 32-blocks (the AVX-512 half step), a
    // model width; m: one row, the 4-row block and its remainders, the
    // fused kernels' most (8), the panel's 8-row block and its remainders
    // (9, 70), both sides of each format's AVX2 cut-over between kernels
    // (4, 6, 12, 32: Avx2KernelFor), more than a 64-row pass, and at the
    // smallest k more than the panel's 256-row pass (270); n: not a
    // multiple of the 4-row or 16-row tiles.
    const std::vector<int> ks = k_quant ? std::vector<int>{256, 768, 2048}
                                        : std::vector<int>{32, 96, 576, 2048};
    for (const std::string& isa : isas) {
      for (int k : ks) {
        for (int m : {1, 3, 4, 6, 8, 9, 12, 32, 70}) {
          CheckProduct({dtype, m, k, 37}, isa, rng);
          if (HasFatalFailure()) return;
        }
        if (k == ks.front()) CheckProduct({dtype, 270, k, 37}, isa, rng);
        if (HasFatalFailure()) return;
      }
    }
  }
}

TEST(QuantProductTest, ZeroRowsAndZeroWeightsGiveZero) {
  for (DType dtype : kBlockFormats) {
    const int k = static_cast<int>(DTypeBlockElems(dtype)) * 2;
    std::vector<uint8_t> w(DTypeBytes(dtype, int64_t(5) * k), 0);
    std::vector<float> x(size_t(2) * k, 0.f);
    x[k + 3] = 1.5f;  // row 1 is not zero, the weights are
    QuantizedActivations a;
    ResizeQuantizedActivations(dtype, 2, k, &a);
    QuantizeActivationRows(x.data(), k, 0, 2, &a);
    for (const std::string& isa : QuantProductRunnableIsas()) {
      std::vector<float> y(10, NAN);
      QuantProductWithIsa(isa, a, w.data(), 0, 5, y.data(), 5);
      for (float v : y) EXPECT_EQ(v, 0.f) << DTypeName(dtype) << " " << isa;
    }
  }
}

// ggml's x86 quantize_row_q8_0: d = max|x| / 127 (kept as float16), q =
// nearest-even(x · 127 / max|x|); quantize_row_q8_K_ref: d = max / -127 for
// the value of largest magnitude, q = nearest-even(x / d) at most 127.
TEST(QuantizedActivationsTest, RoundsAsGgmlActivationBlocks) {
  std::mt19937 rng(3);
  const int k = 512;
  const std::vector<float> x = RandomActivations(1, k, rng);
  for (DType dtype : {DType::kQ4_0, DType::kQ4_K}) {
    QuantizedActivations a;
    ResizeQuantizedActivations(dtype, 1, k, &a);
    QuantizeActivationRows(x.data(), k, 0, 1, &a);
    const int block = BlockFormatOf(dtype).k_quant ? 256 : 32;
    for (int b = 0; b < k; b += block) {
      float amax = 0, max = 0;
      for (int i = b; i < b + block; ++i) {
        if (std::fabs(x[i]) > amax) amax = std::fabs(x[i]), max = x[i];
      }
      const float d = a.scale_row(0)[b / 4];
      if (block == 32) {
        EXPECT_EQ(d, HalfToFloat(FloatToHalf(amax / 127.f)));
      } else {
        EXPECT_EQ(d, 1 / (-127.f / max));
      }
      for (int i = b; i < b + block; ++i) {
        const int q = a.q_row(0)[i];
        EXPECT_LE(std::abs(q), 127);
        EXPECT_LE(std::fabs(x[i] - d * q), std::fabs(d) * 0.5f + 1e-6f) << i;
      }
      // The per-16 sums the bias term uses.
      for (int g = b / 16; g < (b + block) / 16; ++g) {
        int sum = 0;
        for (int i = g * 16; i < g * 16 + 16; ++i) sum += a.q_row(0)[i];
        EXPECT_EQ(a.group_sum(0, g), d * static_cast<float>(sum));
      }
    }
  }
}

}  // namespace
}  // namespace kvserve
