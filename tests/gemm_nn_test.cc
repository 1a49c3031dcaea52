// ProductNN (kernels/cpu/gemm_nn.h), the prefill attention's products, with
// every instruction set this CPU runs, against a double sum: strided A, B and
// C (as attention passes them), every row remainder of the 6-row block and
// column remainders of the 32-column block, and k from 1 to a head dim and a
// context.
#include "kernels/cpu/gemm_nn.h"

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace kvserve::cpu {
namespace {

TEST(GemmNNTest, EveryInstructionSetMatchesTheDoubleSum) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.f, 1.f);
  const std::vector<std::string> isas = ProductNNRunnableIsas();
  ASSERT_EQ(isas.back(), "portable");
  for (const std::string& isa : isas) {
    for (int m : {1, 5, 6, 7, 13, 64}) {
      for (int k : {1, 7, 64, 300}) {
        for (int n : {1, 15, 16, 17, 32, 33, 100}) {
          SCOPED_TRACE(isa + " m " + std::to_string(m) + " k " + std::to_string(k) + " n " +
                       std::to_string(n));
          const int64_t lda = k + 3, ldb = n + 5, ldc = n + 2;
          std::vector<float> a(size_t(m) * lda), b(size_t(k) * ldb);
          for (float& v : a) v = normal(rng);
          for (float& v : b) v = normal(rng);
          std::vector<float> c(size_t(m) * ldc, NAN);
          ProductNNWithIsa(isa, a.data(), lda, b.data(), ldb, m, k, n, c.data(), ldc);
          for (int r = 0; r < m; ++r) {
            for (int j = 0; j < n; ++j) {
              double want = 0, magnitude = 0;
              for (int i = 0; i < k; ++i) {
                want += double(a[r * lda + i]) * b[i * ldb + j];
                magnitude += std::fabs(double(a[r * lda + i]) * b[i * ldb + j]);
              }
              // float32 accumulation in order of i: k roundings at most.
              const double bound = (k + 1) * std::ldexp(1.0, -24) * magnitude + 1e-30;
              ASSERT_NEAR(c[r * ldc + j], want, bound) << "row " << r << " column " << j;
            }
            // The padding between rows of C is left alone.
            for (int64_t j = n; j < ldc; ++j) ASSERT_TRUE(std::isnan(c[r * ldc + j])) << j;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace kvserve::cpu
