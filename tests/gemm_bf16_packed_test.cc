// The packed bf16 product (kernels/cpu/gemm_bf16_packed.h) against a double
// sum over the same bf16 weights and float32 x: every remainder of its 12-row
// register block, its 32-row panels (masked stores past n), its 256-deep
// panels and 16-wide packing steps (and their scalar tails), shares of
// columns as the pool's threads take them, and a row stride wider than k;
// with every instruction set this CPU runs (an AVX-512 machine checks both).
// Skipped on CPUs with neither (the backend then keeps the small-M kernel
// and sgemm).
#include "kernels/cpu/gemm_bf16_packed.h"

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/dtype.h"

namespace kvserve::cpu {
namespace {

TEST(GemmBf16PackedTest, ProductMatchesTheDoubleSum) {
  if (!PackedBf16Supported()) GTEST_SKIP() << "no AVX-512F or AVX2 on this CPU";
  std::mt19937 rng(9);
  std::normal_distribution<float> normal(0.f, 1.f);
  for (const std::string& isa : PackedBf16RunnableIsas()) {
    for (int k : {1, 7, 8, 9, 15, 16, 17, 255, 256, 257, 600}) {
      for (int m : {1, 5, 6, 7, 11, 12, 13, 32, 70}) {
        for (int n : {1, 9, 16, 17, 32, 33, 70}) {
          SCOPED_TRACE(isa + " k " + std::to_string(k) + " m " + std::to_string(m) + " n " +
                       std::to_string(n));
          const int ldx = k + 3;
          std::vector<float> x(size_t(m) * ldx);
          for (float& v : x) v = normal(rng);
          std::vector<uint16_t> w(size_t(n) * k);
          for (uint16_t& v : w) v = FloatToBFloat16(normal(rng) * 0.05f);
          const int ldy = n + 5;
          std::vector<float> y(size_t(m) * ldy, NAN);
          const int split = n / 3;  // two threads' shares
          PackedBf16ProductWithIsa(isa, x.data(), m, ldx, w.data(), k, 0, split, y.data(), ldy);
          PackedBf16ProductWithIsa(isa, x.data(), m, ldx, w.data(), k, split, n, y.data(), ldy);
          for (int r = 0; r < m; ++r) {
            for (int j = 0; j < n; ++j) {
              double ref = 0, magnitude = 0;
              for (int i = 0; i < k; ++i) {
                const double p =
                    double(x[size_t(r) * ldx + i]) * BFloat16ToFloat(w[size_t(j) * k + i]);
                ref += p;
                magnitude += std::fabs(p);
              }
              // Sequential float32 sums over k (each product exact in float32's
              // rounding of it).
              const double bound = 2 * (k + 8) * std::ldexp(1.0, -24) * magnitude + 1e-30;
              ASSERT_NEAR(y[size_t(r) * ldy + j], ref, bound) << "row " << r << " column " << j;
            }
            for (int j = n; j < ldy; ++j)
              ASSERT_TRUE(std::isnan(y[size_t(r) * ldy + j])) << "wrote past n";
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace kvserve::cpu
