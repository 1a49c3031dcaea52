// The small-M product (kernels/cpu/gemm_small_m.h) and Linear around it,
// against a double-precision reference, for each weight storage dtype
// (float32, bfloat16, Q8_0), over row counts on both sides of the sgemm
// cut-over and sizes that exercise every remainder (k not a multiple of the
// vector width, n not a multiple of the W-row block, m not a multiple of the
// x-row block). The reference multiplies by the stored weights' exact values
// (bf16 widened, Q8_0 dequantized: both exact in float32), so float32 results
// may differ from it only by rounding in some summation order:
// |error| ≤ 2·k·ε·Σ|x_i·w_i| (a standard bound for recursive summation,
// doubled for slack), plus a tiny absolute term.
#include <cmath>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/gemm_small_m.h"
#include "kernels/q8_0.h"

namespace kvserve::testing {
namespace {

struct Problem {
  int m, k, n;
  DType w_dtype;
  std::vector<float> x, bias;
  std::vector<float> w;         // [n, k] the stored weights' exact values
  std::vector<uint8_t> stored;  // [n, k] in w_dtype
};

Problem Random(int m, int k, int n, DType w_dtype, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  Problem p{m, k, n, w_dtype, std::vector<float>(size_t(m) * k), std::vector<float>(n),
            std::vector<float>(size_t(n) * k), {}};
  for (float& v : p.x) v = u(rng);
  for (float& v : p.bias) v = u(rng);
  for (float& v : p.w) v = u(rng);
  p.stored.resize(DTypeBytes(w_dtype, int64_t(n) * k));
  EXPECT_TRUE(ConvertFromFloat32(p.w.data(), int64_t(n) * k, w_dtype, p.stored.data()).ok());
  EXPECT_TRUE(ConvertToFloat32(p.stored.data(), w_dtype, int64_t(n) * k, p.w.data()).ok());
  return p;
}

// Checks y (row stride n) against Σ x·w (+ bias) in double.
void ExpectClose(const Problem& p, const std::vector<float>& y, bool with_bias,
                 const std::string& what) {
  const double eps = std::numeric_limits<float>::epsilon();
  for (int r = 0; r < p.m; ++r) {
    for (int j = 0; j < p.n; ++j) {
      double exact = with_bias ? p.bias[j] : 0, magnitude = with_bias ? std::abs(p.bias[j]) : 0;
      for (int i = 0; i < p.k; ++i) {
        const double t = double(p.x[size_t(r) * p.k + i]) * p.w[size_t(j) * p.k + i];
        exact += t;
        magnitude += std::abs(t);
      }
      const double bound = 2.0 * (p.k + 1) * eps * magnitude + 1e-6;
      ASSERT_NEAR(y[size_t(r) * p.n + j], exact, bound)
          << what << " " << DTypeName(p.w_dtype) << " m=" << p.m << " k=" << p.k
          << " n=" << p.n << " at [" << r << ", " << j << "]";
    }
  }
}

class GemmSmallMTest : public ::testing::TestWithParam<DType> {
 protected:
  // Q8_0 rows are whole 32-weight blocks.
  std::vector<int> Widths() const {
    if (GetParam() == DType::kQ8_0) return {32, 64, 96, 576};
    return {1, 3, 15, 16, 17, 33, 576};
  }
};

// Every instruction set this CPU runs (an AVX-512 machine checks all three).
TEST_P(GemmSmallMTest, ProductMatchesDoubleReferenceOverEveryRemainder) {
  for (const std::string& isa : cpu::SmallMRunnableIsas()) {
    uint32_t seed = 1;
    for (int m : {1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 21, 23, 32, 64}) {
      for (int k : Widths()) {
        for (int n : {1, 3, 4, 5, 67}) {
          const Problem p = Random(m, k, n, GetParam(), seed++);
          std::vector<float> y(size_t(m) * n, NAN);
          // Two shares, as two pool threads would compute them.
          cpu::SmallMProductWithIsa(isa, p.x.data(), m, k, p.stored.data(), p.w_dtype, k, 0, n / 2,
                                    y.data(), n);
          cpu::SmallMProductWithIsa(isa, p.x.data(), m, k, p.stored.data(), p.w_dtype, k, n / 2, n,
                                    y.data(), n);
          ExpectClose(p, y, false, "SmallMProduct/" + isa);
        }
      }
    }
  }
}

// Linear picks the small-M kernel up to the cut-over and sgemm above it (over
// float32 panels converted from bf16 / Q8_0); both sides, with and without
// bias, on a real projection shape (SmolLM2's k/v) and on one whose column
// slices span several conversion panels (TinyLlama's k: 2048 wide).
TEST_P(GemmSmallMTest, LinearMatchesDoubleReferenceOnBothSidesOfTheCutOver) {
  const int cut = cpu::SmallMMaxRows(GetParam());
  uint32_t seed = 100;
  for (auto [k, n] : {std::pair{576, 192}, std::pair{2048, 300}}) {
    for (int m : {1, 2, cut, cut + 1, 2 * cut + 3}) {
      for (bool with_bias : {false, true}) {
        Problem p = Random(m, k, n, GetParam(), seed++);
        std::vector<float> y(size_t(m) * p.n, NAN);
        cpu::Linear(Tensor(p.x.data(), DType::kFloat32, {m, p.k}),
                    {Tensor(p.stored.data(), p.w_dtype, {p.n, p.k})},
                    with_bias ? Tensor(p.bias.data(), DType::kFloat32, {p.n}) : Tensor(),
                    Tensor(y.data(), DType::kFloat32, {m, p.n}), /*quantize_activations=*/false);
        ExpectClose(p, y, with_bias, "Linear");
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(WeightDTypes, GemmSmallMTest,
                         ::testing::Values(DType::kFloat32, DType::kBFloat16, DType::kQ8_0),
                         [](const ::testing::TestParamInfo<DType>& info) {
                           return std::string(DTypeName(info.param));
                         });

// Q8_0 blocks as ggml lays them out: the kernel reads scale and q from the
// 34-byte block, so a wrong stride or sign extension shows up here.
TEST(Q8_0Test, DequantizeIsScaleTimesSignedQuant) {
  BlockQ8_0 b{FloatToHalf(0.5f), {}};
  for (int i = 0; i < kQ8_0BlockSize; ++i) b.q[i] = static_cast<int8_t>(i % 2 ? -i : 4 * i - 128);
  float out[kQ8_0BlockSize];
  DequantizeQ8_0(&b, kQ8_0BlockSize, out);
  for (int i = 0; i < kQ8_0BlockSize; ++i) EXPECT_EQ(out[i], 0.5f * b.q[i]) << i;
  EXPECT_EQ(DTypeBytes(DType::kQ8_0, 64), 68u);
}

}  // namespace
}  // namespace kvserve::testing
