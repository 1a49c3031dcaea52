// The CPU sampler's new controls, each against a straightforward reference
// written here from the definitions (docs/sampling.md):
//   - penalties: the adjusted logits equal the HF/OpenAI formulas, entry by
//     entry, and greedy picks their argmax;
//   - banned ids (min_new_tokens) are never drawn;
//   - min_p: the drawn token equals an inverse-CDF walk over the tokens whose
//     probability is at least min_p times the largest, with and without top_k;
//   - logprobs: log_softmax of the raw logits (before penalties), top-N
//     sorted by logit with ties to the lower id;
//   - shapes of the new tensors are checked.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"

namespace kvserve::testing {
namespace {

constexpr int kVocab = 300;

std::vector<float> RandomLogits(int rows, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.f, 3.f);
  std::vector<float> logits(size_t(rows) * kVocab);
  for (float& x : logits) x = normal(rng);
  return logits;
}

// One host-memory batch of Sample's inputs; Params() views them.
struct Batch {
  explicit Batch(std::vector<float> l) : logits(std::move(l)) {
    rows = static_cast<int>(logits.size() / kVocab);
    temperature.assign(rows, 0.f);
    top_k.assign(rows, 0);
    top_p.assign(rows, 1.f);
    min_p.assign(rows, 0.f);
    uniform.assign(rows, 0.f);
    out.assign(rows, -1);
    rep.assign(rows, 1.f);
    pres.assign(rows, 0.f);
    freq.assign(rows, 0.f);
    seen_offsets.assign(rows + 1, 0);
    banned_offsets.assign(rows + 1, 0);
    top_n.assign(rows, -1);
    token_logprob.assign(rows, 0.f);
  }
  // Gives row r the (token, count) entries and banned ids (rows in order).
  void SetLists(int r, std::vector<std::pair<int32_t, int32_t>> seen, std::vector<int32_t> ban) {
    for (auto [t, c] : seen) seen_tokens.push_back(t), seen_counts.push_back(c);
    banned.insert(banned.end(), ban.begin(), ban.end());
    for (int i = r + 1; i <= rows; ++i) {
      seen_offsets[i] = static_cast<int32_t>(seen_tokens.size());
      banned_offsets[i] = static_cast<int32_t>(banned.size());
    }
  }
  SampleParams Params(bool adjust, int k = 0) {
    SampleParams p;
    p.num_rows = rows;
    p.logits = Tensor(logits.data(), DType::kFloat32, {rows, kVocab});
    p.temperature = Tensor(temperature.data(), DType::kFloat32, {rows});
    p.top_k = Tensor(top_k.data(), DType::kInt32, {rows});
    p.top_p = Tensor(top_p.data(), DType::kFloat32, {rows});
    p.min_p = Tensor(min_p.data(), DType::kFloat32, {rows});
    p.uniform = Tensor(uniform.data(), DType::kFloat32, {rows});
    p.out_tokens = Tensor(out.data(), DType::kInt32, {rows});
    if (adjust) {
      LogitAdjustments& a = p.adjust;
      a.repetition_penalty = Tensor(rep.data(), DType::kFloat32, {rows});
      a.presence_penalty = Tensor(pres.data(), DType::kFloat32, {rows});
      a.frequency_penalty = Tensor(freq.data(), DType::kFloat32, {rows});
      a.seen_offsets = Tensor(seen_offsets.data(), DType::kInt32, {rows + 1});
      a.banned_offsets = Tensor(banned_offsets.data(), DType::kInt32, {rows + 1});
      seen_tokens.reserve(1), seen_counts.reserve(1), banned.reserve(1);  // non-null views
      a.seen_tokens = Tensor(seen_tokens.data(), DType::kInt32, {int64_t(seen_tokens.size())});
      a.seen_counts = Tensor(seen_counts.data(), DType::kInt32, {int64_t(seen_counts.size())});
      a.banned_tokens = Tensor(banned.data(), DType::kInt32, {int64_t(banned.size())});
      saved.assign(seen_tokens.size() + banned.size() + 1, 0.f);
      a.saved_logits = Tensor(saved.data(), DType::kFloat32, {int64_t(saved.size()) - 1});
    }
    if (k >= 0 && std::any_of(top_n.begin(), top_n.end(), [](int n) { return n >= 0; })) {
      top_ids.assign(size_t(rows) * k, -1);
      top_logprobs.assign(size_t(rows) * k, 0.f);
      top_ids.reserve(1), top_logprobs.reserve(1);
      LogprobOutputs& l = p.logprobs;
      l.top_n = Tensor(top_n.data(), DType::kInt32, {rows});
      l.token_logprob = Tensor(token_logprob.data(), DType::kFloat32, {rows});
      l.top_ids = Tensor(top_ids.data(), DType::kInt32, {rows, k});
      l.top_logprobs = Tensor(top_logprobs.data(), DType::kFloat32, {rows, k});
    }
    return p;
  }
  int rows;
  std::vector<float> logits, temperature, top_p, min_p, uniform, rep, pres, freq, token_logprob,
      top_logprobs, saved;
  std::vector<int32_t> top_k, out, seen_offsets, banned_offsets, seen_tokens, seen_counts, banned,
      top_n, top_ids;
};

// The penalty formulas as the docs state them.
float Penalized(float x, float rep, float pres, float freq, int count) {
  x = x > 0.f ? x / rep : x * rep;
  if (count > 0) x -= freq * count + pres;
  return x;
}

int32_t ArgMax(const float* row) {
  return static_cast<int32_t>(std::max_element(row, row + kVocab) - row);
}

TEST(SampleCpuTest, PenaltiesMatchTheFormulasAndGreedyTakesTheirArgmax) {
  CpuBackend backend;
  const std::vector<float> raw = RandomLogits(4, 1);
  Batch b(raw);
  const float reps[] = {1.f, 1.7f, 0.6f, 1.2f}, press[] = {0.f, 0.f, 1.5f, -0.5f},
              freqs[] = {0.f, 0.3f, 0.f, 2.f};
  std::mt19937 rng(2);
  std::vector<std::vector<std::pair<int32_t, int32_t>>> seen(4);
  for (int r = 0; r < 4; ++r) {
    b.rep[r] = reps[r], b.pres[r] = press[r], b.freq[r] = freqs[r];
    // The raw argmax is always penalized, so the pick must move or stay by the formula.
    seen[r].push_back({ArgMax(&raw[r * kVocab]), 1 + r});
    for (int i = 0; i < 20; ++i) {
      const int32_t t = rng() % kVocab;
      if (std::none_of(seen[r].begin(), seen[r].end(), [&](auto& e) { return e.first == t; })) {
        seen[r].push_back({t, int32_t(rng() % 4)});
      }
    }
    b.SetLists(r, seen[r], {});
  }
  ASSERT_TRUE(backend.Sample(b.Params(/*adjust=*/true)).ok());
  for (int r = 0; r < 4; ++r) {
    std::vector<float> expected(raw.begin() + r * kVocab, raw.begin() + (r + 1) * kVocab);
    for (auto [t, c] : seen[r]) expected[t] = Penalized(expected[t], reps[r], press[r], freqs[r], c);
    for (int i = 0; i < kVocab; ++i) ASSERT_EQ(b.logits[r * kVocab + i], expected[i]) << r << " " << i;
    EXPECT_EQ(b.out[r], ArgMax(expected.data())) << "row " << r;
  }
  EXPECT_NE(b.out[1], ArgMax(&raw[kVocab])) << "a strong penalty on the argmax moves the pick";
}

TEST(SampleCpuTest, BannedIdsAreNeverDrawn) {
  CpuBackend backend;
  std::vector<float> logits = RandomLogits(1, 3);
  const int32_t top = ArgMax(logits.data());
  logits[top] = 50.f;  // nearly all the mass
  std::mt19937 rng(4);
  for (int trial = 0; trial < 200; ++trial) {
    Batch b(logits);
    b.temperature[0] = 1.f;
    b.uniform[0] = std::uniform_real_distribution<float>(0.f, 1.f)(rng);
    b.SetLists(0, {}, {top, 7});
    ASSERT_TRUE(backend.Sample(b.Params(true)).ok());
    EXPECT_NE(b.out[0], top);
    EXPECT_NE(b.out[0], 7);
  }
}

// Inverse CDF over the tokens with p >= min_p · p_max: in id order without
// top_k, in (logit desc, id asc) order among the top_k with it.
int32_t MinPReference(const float* row, float temperature, int top_k, float min_p, float u) {
  std::vector<int32_t> order(kVocab);
  std::iota(order.begin(), order.end(), 0);
  int n = kVocab;
  if (top_k > 0) {
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return row[a] > row[b]; });
    n = top_k;
  }
  const float max = *std::max_element(row, row + kVocab);
  std::vector<double> w(n);
  double total = 0;
  for (int i = 0; i < n; ++i) {
    const float p = std::exp((row[order[i]] - max) / temperature);
    w[i] = p >= min_p ? p : 0.0;
    total += w[i];
  }
  double c = 0;
  for (int i = 0; i < n; ++i) {
    c += w[i];
    if (c > u * total) return order[i];
  }
  return -1;
}

TEST(SampleCpuTest, MinPKeepsTokensAboveTheFractionOfTheTop) {
  CpuBackend backend;
  std::mt19937 rng(5);
  int differing_from_plain = 0;
  for (int trial = 0; trial < 300; ++trial) {
    Batch b(RandomLogits(1, 100 + trial));
    b.temperature[0] = 0.5f + (trial % 4) * 0.5f;
    b.top_k[0] = trial % 2 == 0 ? 0 : 40;
    b.min_p[0] = std::array<float, 3>{0.05f, 0.2f, 0.6f}[trial % 3];
    b.uniform[0] = std::uniform_real_distribution<float>(0.f, 0.999f)(rng);
    const std::vector<float> row = b.logits;
    ASSERT_TRUE(backend.Sample(b.Params(false)).ok());
    EXPECT_EQ(b.out[0], MinPReference(row.data(), b.temperature[0], b.top_k[0], b.min_p[0], b.uniform[0]))
        << "trial " << trial;
    const float max = *std::max_element(row.begin(), row.end());
    EXPECT_GE(std::exp((row[b.out[0]] - max) / b.temperature[0]), b.min_p[0]);
    differing_from_plain += b.out[0] != MinPReference(row.data(), b.temperature[0], b.top_k[0], 0.f, b.uniform[0]);
  }
  EXPECT_GT(differing_from_plain, 0) << "min_p never changed a draw: the test proves nothing";
}

TEST(SampleCpuTest, LogprobsAreOfTheRawLogitsWithSortedAlternatives) {
  CpuBackend backend;
  std::vector<float> raw = RandomLogits(3, 6);
  for (int i = 0; i < 10; ++i) raw[kVocab + 50 + i] = 9.f;  // ties in row 1: lower id first
  Batch b(raw);
  b.top_n = {20, 5, 0};
  b.temperature = {0.f, 1.f, 0.7f};
  b.uniform = {0.f, 0.3f, 0.8f};
  b.rep = {2.f, 1.f, 1.f};  // row 0 is penalized: its logprobs stay raw
  b.SetLists(0, {{ArgMax(raw.data()), 1}}, {});
  b.SetLists(1, {}, {});
  b.SetLists(2, {}, {});
  ASSERT_TRUE(backend.Sample(b.Params(true, /*k=*/20)).ok());
  for (int r = 0; r < 3; ++r) {
    const float* row = &raw[r * kVocab];
    const double max = *std::max_element(row, row + kVocab);
    double sum = 0;
    for (int i = 0; i < kVocab; ++i) sum += std::exp(row[i] - max);
    const double lse = max + std::log(sum);
    EXPECT_NEAR(b.token_logprob[r], row[b.out[r]] - lse, 1e-5) << "row " << r;
    std::vector<int32_t> order(kVocab);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int c) { return row[a] > row[c]; });
    for (int i = 0; i < b.top_n[r]; ++i) {
      EXPECT_EQ(b.top_ids[r * 20 + i], order[i]) << "row " << r << " rank " << i;
      EXPECT_NEAR(b.top_logprobs[r * 20 + i], row[order[i]] - lse, 1e-5);
    }
  }
  EXPECT_NE(b.out[0], ArgMax(raw.data())) << "the penalty moved the greedy pick";
}

TEST(SampleCpuTest, MisshapenControlsAreRefused) {
  CpuBackend backend;
  Batch b(RandomLogits(2, 7));
  SampleParams p = b.Params(false);
  p.min_p = Tensor(b.min_p.data(), DType::kFloat32, {1});
  EXPECT_EQ(backend.Sample(p).code(), absl::StatusCode::kInvalidArgument);
  b.SetLists(0, {}, {});
  p = b.Params(true);
  p.adjust.seen_offsets = Tensor(b.seen_offsets.data(), DType::kInt32, {2});
  EXPECT_EQ(backend.Sample(p).code(), absl::StatusCode::kInvalidArgument);
  b.top_n = {1, -1};
  p = b.Params(false, 1);
  p.logprobs.top_logprobs = Tensor(b.top_logprobs.data(), DType::kFloat32, {2, 2});
  EXPECT_EQ(backend.Sample(p).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kvserve::testing
