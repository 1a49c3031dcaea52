// The small-M product (kernels/cpu/gemm_small_m.h) and Linear around it,
// against a double-precision reference, over row counts on both sides of the
// sgemm cut-over and sizes that exercise every remainder (k not a multiple of
// the vector width, n not a multiple of the W-row block, m not a multiple of
// the x-row block). Float32 results may differ from the exact sum only by
// rounding in some summation order: |error| ≤ 2·k·ε·Σ|x_i·w_i| (a standard
// bound for recursive summation, doubled for slack), plus a tiny absolute term.
#include <cmath>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/gemm_small_m.h"

namespace kvserve::testing {
namespace {

struct Problem {
  int m, k, n;
  std::vector<float> x, w, bias;
};

Problem Random(int m, int k, int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  Problem p{m, k, n, std::vector<float>(size_t(m) * k), std::vector<float>(size_t(n) * k),
            std::vector<float>(n)};
  for (float& v : p.x) v = u(rng);
  for (float& v : p.w) v = u(rng);
  for (float& v : p.bias) v = u(rng);
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
          << what << " m=" << p.m << " k=" << p.k << " n=" << p.n << " at [" << r << ", " << j
          << "]";
    }
  }
}

TEST(GemmSmallMTest, ProductMatchesDoubleReferenceOverEveryRemainder) {
  uint32_t seed = 1;
  for (int m : {1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 32}) {
    for (int k : {1, 3, 15, 16, 17, 33, 576}) {
      for (int n : {1, 3, 4, 5, 67}) {
        const Problem p = Random(m, k, n, seed++);
        std::vector<float> y(size_t(m) * n, NAN);
        // Two shares, as two pool threads would compute them.
        cpu::SmallMProduct(p.x.data(), m, k, p.w.data(), k, 0, n / 2, y.data(), n);
        cpu::SmallMProduct(p.x.data(), m, k, p.w.data(), k, n / 2, n, y.data(), n);
        ExpectClose(p, y, false, std::string("SmallMProduct/") + cpu::SmallMIsa());
      }
    }
  }
}

// Linear picks the small-M kernel up to the cut-over and sgemm above it; both
// sides, with and without bias, on a real projection shape (SmolLM2's k/v).
TEST(GemmSmallMTest, LinearMatchesDoubleReferenceOnBothSidesOfTheCutOver) {
  const int cut = cpu::SmallMMaxRows();
  uint32_t seed = 100;
  for (int m : {1, 2, cut, cut + 1, 2 * cut + 3}) {
    for (bool with_bias : {false, true}) {
      Problem p = Random(m, 576, 192, seed++);
      std::vector<float> y(size_t(m) * p.n, NAN);
      cpu::Linear(Tensor(p.x.data(), DType::kFloat32, {m, p.k}),
                  Tensor(p.w.data(), DType::kFloat32, {p.n, p.k}),
                  with_bias ? Tensor(p.bias.data(), DType::kFloat32, {p.n}) : Tensor(),
                  Tensor(y.data(), DType::kFloat32, {m, p.n}));
      ExpectClose(p, y, with_bias, "Linear");
    }
  }
}

}  // namespace
}  // namespace kvserve::testing
