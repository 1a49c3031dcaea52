// The bf16 × bf16 product (kernels/cpu/gemm_bf16.h) against a double sum over
// the same bf16 values, and its rounding of x against FloatToBFloat16. Skipped
// on CPUs without AVX512_BF16 (the backend then keeps float32 activations).
#include "kernels/cpu/gemm_bf16.h"

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/dtype.h"

namespace kvserve::cpu {
namespace {

TEST(GemmBf16Test, ProductMatchesTheDoubleSumOverBf16Values) {
  if (!Bf16DotSupported()) GTEST_SKIP() << "no AVX512_BF16 on this CPU";
  std::mt19937 rng(9);
  std::normal_distribution<float> normal(0.f, 1.f);
  for (int k : {32, 40, 96, 2048}) {  // whole steps of 32, and masked tails
    for (int m : {1, 3, 5, 70}) {
      SCOPED_TRACE("k " + std::to_string(k) + " m " + std::to_string(m));
      const int n = 37;
      std::vector<float> x(size_t(m) * k);
      for (float& v : x) v = normal(rng);
      std::vector<uint16_t> w(size_t(n) * k), xb(size_t(m) * k);
      for (uint16_t& v : w) v = FloatToBFloat16(normal(rng) * 0.05f);
      RoundRowsToBf16(x.data(), k, k, 0, m, xb.data());
      for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(xb[i], FloatToBFloat16(x[i])) << i;
      std::vector<float> y(size_t(m) * n, NAN);
      Bf16Product(xb.data(), m, k, w.data(), 0, 20, y.data(), n);  // two threads' shares
      Bf16Product(xb.data(), m, k, w.data(), 20, n, y.data(), n);
      for (int r = 0; r < m; ++r) {
        for (int j = 0; j < n; ++j) {
          double ref = 0, magnitude = 0;
          for (int i = 0; i < k; ++i) {
            const double p = double(BFloat16ToFloat(xb[size_t(r) * k + i])) *
                             BFloat16ToFloat(w[size_t(j) * k + i]);
            ref += p;
            magnitude += std::fabs(p);
          }
          const double bound = 2 * (k / 2.0 + 8) * std::ldexp(1.0, -24) * magnitude + 1e-30;
          ASSERT_NEAR(y[size_t(r) * n + j], ref, bound) << "row " << r << " column " << j;
        }
      }
    }
  }
}

}  // namespace
}  // namespace kvserve::cpu
