// The CPU backend's vector exp and the row operations on it
// (kernels/cpu/vector_math.h) against std::exp in double precision and the
// reference softmax (kernels/attention_math.h).
#include "kernels/cpu/vector_math.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/attention_math.h"

namespace kvserve::cpu {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// Distance in float32 units in the last place (both finite, same sign).
int64_t Ulps(float a, float b) {
  int32_t ia, ib;
  std::memcpy(&ia, &a, 4);
  std::memcpy(&ib, &b, 4);
  return std::llabs(int64_t(ia) - int64_t(ib));
}

float Exp(float x) {
  float v = x;
  ExpShiftedInPlace(&v, 1, 0.f);
  return v;
}

TEST(VectorMathTest, ExpWithinTwoUlpsOverItsRange) {
  // Every 97th float32 between -87.3 and 88.7 (about 22 million), in
  // vectors of 8 and through the tail path.
  std::vector<float> xs;
  float lo = -87.3f, hi = 88.7f;
  int32_t bits;
  for (float x = lo; x < hi;) {
    xs.push_back(x);
    std::memcpy(&bits, &x, 4);
    bits += x < 0 ? -97 : 97;
    if (x < 0 && bits < int32_t(0x80000000u) + 97) {  // crossing zero
      x = 0.f;
      continue;
    }
    std::memcpy(&x, &bits, 4);
  }
  xs.push_back(0.f);
  xs.push_back(-0.f);
  std::vector<float> v = xs;
  ExpShiftedInPlace(v.data(), static_cast<int64_t>(v.size()), 0.f);
  int64_t worst = 0;
  float worst_x = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const float want = static_cast<float>(std::exp(static_cast<double>(xs[i])));
    const int64_t u = Ulps(v[i], want);
    if (u > worst) worst = u, worst_x = xs[i];
  }
  EXPECT_LE(worst, 2) << "at x = " << worst_x << " (" << VectorMathIsa() << ")";
  EXPECT_GT(xs.size(), 1000000u);
}

TEST(VectorMathTest, ExpEdges) {
  EXPECT_EQ(Exp(-kInf), 0.f);
  EXPECT_EQ(Exp(-88.f), 0.f);  // below the smallest normal result
  EXPECT_EQ(Exp(-1000.f), 0.f);
  EXPECT_EQ(Exp(kInf), kInf);
  EXPECT_EQ(Exp(89.f), kInf);
  EXPECT_EQ(Exp(0.f), 1.f);
  EXPECT_TRUE(std::isnan(Exp(std::numeric_limits<float>::quiet_NaN())));
  // The ends of the range, within 2 ulp of the exact value.
  EXPECT_NEAR(Exp(88.72f), std::exp(double(88.72f)), std::exp(double(88.72f)) * 2.4e-7);
  EXPECT_NEAR(Exp(-87.3f), std::exp(double(-87.3f)), std::exp(double(-87.3f)) * 2.4e-7);
}

TEST(VectorMathTest, ExpShiftedSumsWhatItWrites) {
  for (int n = 0; n <= 19; ++n) {
    std::vector<float> v(n);
    for (int i = 0; i < n; ++i) v[i] = 0.25f * i - 2.f;
    std::vector<float> in = v;
    const float sum = ExpShiftedInPlace(v.data(), n, 1.5f);
    double want_sum = 0;
    for (int i = 0; i < n; ++i) {
      const double want = std::exp(double(in[i]) - 1.5);
      EXPECT_NEAR(v[i], want, want * 3e-7) << "n " << n << " i " << i;
      want_sum += v[i];
    }
    EXPECT_NEAR(sum, want_sum, 1e-5 * (1 + want_sum)) << "n " << n;
  }
}

TEST(VectorMathTest, SoftmaxMatchesTheReference) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.f, 4.f);
  for (int n : {1, 2, 7, 8, 9, 15, 16, 17, 63, 64, 65, 300, 2049}) {
    for (bool masked : {false, true}) {
      std::vector<float> s(n);
      for (float& x : s) x = normal(rng);
      if (masked) {
        for (int i = 0; i < n; i += 3) s[i] = kMaskedScore;
        if (n > 1) s[1] = 1e4f;  // a large score: the max is subtracted first
      }
      std::vector<float> want = s;
      const bool any = FastGuardedSoftmaxInPlace(s.data(), n);
      ASSERT_EQ(any, GuardedSoftmaxInPlace(want.data(), n));
      double total = 0;
      // The reference sums n float32 terms in order: its own error is up to
      // n·ε of the sum; the bound is that plus both exps' 2 ulp.
      const double bound = (n + 4) * std::numeric_limits<float>::epsilon();
      for (int i = 0; i < n; ++i) {
        if (masked && i % 3 == 0) {
          EXPECT_EQ(s[i], 0.f) << "masked keys get exactly zero";
        }
        EXPECT_NEAR(s[i], want[i], bound * want[i] + 1e-12) << "n " << n << " i " << i;
        total += s[i];
      }
      EXPECT_NEAR(total, any ? 1.0 : 0.0, 1e-5) << "n " << n;
    }
  }
}

TEST(VectorMathTest, SoftmaxOfOnlyMaskedScoresIsZeros) {
  std::vector<float> s(11, kMaskedScore);
  EXPECT_FALSE(FastGuardedSoftmaxInPlace(s.data(), 11));
  for (float x : s) EXPECT_EQ(x, 0.f);
}

TEST(VectorMathTest, SiluMulMatchesTheFormula) {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.f, 3.f);
  for (int n : {1, 5, 8, 13, 5632}) {
    std::vector<float> gate(n), up(n), out(n);
    for (int i = 0; i < n; ++i) gate[i] = normal(rng), up[i] = normal(rng);
    if (n >= 5) gate[0] = -100.f, gate[1] = 100.f, gate[2] = -87.5f, gate[3] = 0.f, gate[4] = 90.f;
    SiluMulRow(gate.data(), up.data(), out.data(), n);
    for (int i = 0; i < n; ++i) {
      const double g = gate[i], want = g / (1.0 + std::exp(-g)) * up[i];
      EXPECT_NEAR(out[i], want, 5e-7 * std::abs(want) + 1e-30) << "gate " << g;
    }
  }
}

}  // namespace
}  // namespace kvserve::cpu
