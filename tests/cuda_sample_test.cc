// The GPU sampler against the CPU's, row by row, on the same logits and the
// same uniform draws: greedy rows (ties: the lowest id) must match exactly;
// sampled rows over a grid of temperature × top_k × top_p must pick the same
// token, except where the uniform lands within 1e-5 (relative) of a CDF
// boundary, where CUDA's expf and the float64 summation order may
// legitimately differ from glibc's (see kernels/cuda/sample.cu). Such
// near-ties must stay rare (under 1% of rows). Logits with many exact ties
// (quantized to 0.5) check the id tie-break inside top-k and top-p.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cuda/device_info.h"
#include "tests/cuda_test_util.h"

namespace kvserve::testing {
namespace {

struct RowParams {
  float temperature;
  int32_t top_k;
  float top_p;
  float uniform;
};

// The CPU rule (kernels/cpu/sample_cpu.cc) replayed to measure how close the
// draw came to a decision boundary: the smallest relative gap between a
// threshold (top_p · total, uniform · total) and a cumulative sum next to
// where the walk stopped.
double BoundaryGap(const float* logits, int vocab, const RowParams& r) {
  if (r.temperature <= 0.f) return 1.0;
  const bool use_top_k = r.top_k > 0 && r.top_k < vocab, use_top_p = r.top_p < 1.f;
  std::vector<int32_t> order(vocab);
  std::iota(order.begin(), order.end(), 0);
  if (use_top_k || use_top_p) {
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  }
  int candidates = use_top_k ? r.top_k : vocab;
  const float max_logit = *std::max_element(logits, logits + vocab);
  std::vector<double> probs(candidates);
  double total = 0;
  for (int i = 0; i < candidates; ++i) {
    probs[i] = std::exp((logits[order[i]] - max_logit) / r.temperature);
    total += probs[i];
  }
  double gap = 1.0;
  if (use_top_p) {
    double mass = 0;
    int keep = 0;
    while (keep < candidates) {
      mass += probs[keep++];
      gap = std::min(gap, std::fabs(mass - r.top_p * total) / total);
      if (mass >= r.top_p * total) break;
    }
    candidates = keep;
    total = mass;
  }
  const double target = double(r.uniform) * total;
  double cumulative = 0;
  for (int i = 0; i < candidates; ++i) {
    cumulative += probs[i];
    gap = std::min(gap, std::fabs(cumulative - target) / total);
    if (cumulative > target) break;
  }
  return gap;
}

void CompareRows(cuda::CudaBackend& gpu, const std::vector<float>& logits, int vocab,
                 const std::vector<RowParams>& rows, bool exact) {
  const int64_t s = rows.size();
  std::vector<float> temperature, top_p, uniform, host_logits = logits;
  std::vector<int32_t> top_k, want(s, -1);
  for (const RowParams& r : rows) {
    temperature.push_back(r.temperature);
    top_k.push_back(r.top_k);
    top_p.push_back(r.top_p);
    uniform.push_back(r.uniform);
  }
  CpuBackend cpu;
  SampleParams p;
  p.logits = HostTensor(host_logits, {s, vocab});
  p.temperature = HostTensor(temperature, {s});
  p.top_k = HostInts(top_k, {s});
  p.top_p = HostTensor(top_p, {s});
  p.uniform = HostTensor(uniform, {s});
  p.out_tokens = HostInts(want, {s});
  p.num_rows = static_cast<int>(s);
  ASSERT_TRUE(cpu.Sample(p).ok());

  DeviceTensor d_logits(gpu, DType::kFloat32, {s, vocab}), d_t(gpu, DType::kFloat32, {s});
  DeviceTensor d_k(gpu, DType::kInt32, {s}), d_p(gpu, DType::kFloat32, {s});
  DeviceTensor d_u(gpu, DType::kFloat32, {s}), d_out(gpu, DType::kInt32, {s});
  d_logits.Set(logits);
  d_t.Set(temperature);
  d_k.SetInts(top_k);
  d_p.Set(top_p);
  d_u.Set(uniform);
  p.logits = d_logits, p.temperature = d_t, p.top_k = d_k, p.top_p = d_p, p.uniform = d_u;
  p.out_tokens = d_out;
  ASSERT_TRUE(gpu.Sample(p).ok());
  const std::vector<int32_t> got = d_out.GetInts();
  int near_ties = 0;
  for (int64_t i = 0; i < s; ++i) {
    const RowParams& r = rows[i];
    ASSERT_GE(got[i], 0) << "row " << i;
    ASSERT_LT(got[i], vocab) << "row " << i;
    if (got[i] == want[i]) continue;
    const double gap = BoundaryGap(logits.data() + i * vocab, vocab, r);
    ASSERT_FALSE(exact || r.temperature <= 0.f)
        << "row " << i << ": GPU " << got[i] << ", CPU " << want[i];
    ASSERT_LT(gap, 1e-5) << "row " << i << " (T " << r.temperature << ", top_k " << r.top_k
                         << ", top_p " << r.top_p << ", u " << r.uniform << "): GPU " << got[i]
                         << ", CPU " << want[i] << ", boundary gap " << gap;
    ++near_ties;
  }
  EXPECT_LE(near_ties, std::max<int64_t>(1, s / 100)) << near_ties << " near-boundary differences in " << s << " rows";
}

class CudaSampleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda::DeviceCount() == 0) GTEST_SKIP() << "no CUDA device: " << cuda::DescribeDevice();
    gpu_ = NewCudaBackend(DType::kFloat32);
    ASSERT_NE(gpu_, nullptr);
  }

  std::vector<float> Logits(int rows, int vocab, float scale, bool quantize) {
    std::vector<float> l = RandomValues(rng_, int64_t(rows) * vocab, DType::kFloat32, scale);
    if (quantize) {
      for (float& x : l) x = std::round(x * 2.f) / 2.f;  // many exact ties, zeros (±0) too
    }
    return l;
  }

  std::mt19937 rng_{99};
  std::unique_ptr<cuda::CudaBackend> gpu_;
};

TEST_F(CudaSampleTest, GreedyIsTheArgmaxWithTheLowestIdOnTies) {
  for (int vocab : {320, 128256}) {
    for (bool quantize : {false, true}) {
      const int rows = 16;
      std::vector<RowParams> params(rows, RowParams{0.f, 0, 1.f, 0.5f});
      params[1].top_k = 5;  // ignored when greedy
      params[2].top_p = 0.3f;
      CompareRows(*gpu_, Logits(rows, vocab, 3.f, quantize), vocab, params, /*exact=*/true);
    }
  }
}

TEST_F(CudaSampleTest, SampledTokensFollowTheCpuRule) {
  std::uniform_real_distribution<float> unit(0.f, 1.f);
  for (int vocab : {320, 1000}) {
    for (bool quantize : {false, true}) {
      SCOPED_TRACE("vocab " + std::to_string(vocab) + (quantize ? ", tied logits" : ""));
      std::vector<RowParams> params;
      for (float t : {0.3f, 0.7f, 1.f, 1.6f}) {
        for (int32_t k : {0, 1, 5, 50, vocab - 1, vocab, vocab + 3}) {
          for (float p : {1.f, 0.95f, 0.5f, 0.05f}) {
            for (int draw = 0; draw < 3; ++draw) params.push_back({t, k, p, unit(rng_)});
          }
        }
      }
      params.push_back({1.f, 0, 1.f, 0.f});           // uniform 0: the first candidate
      params.push_back({1.f, 0, 1.f, 0.99999994f});   // the largest float below 1
      params.push_back({1.f, 7, 0.5f, 0.99999994f});
      const int rows = static_cast<int>(params.size());
      CompareRows(*gpu_, Logits(rows, vocab, 2.f, quantize), vocab, params, /*exact=*/false);
    }
  }
}

TEST_F(CudaSampleTest, LargeVocabularyWithTopKAndTopP) {
  const int vocab = 128256;
  std::uniform_real_distribution<float> unit(0.f, 1.f);
  std::vector<RowParams> params = {{0.8f, 40, 1.f, unit(rng_)},  {0.8f, 0, 0.9f, unit(rng_)},
                                   {0.8f, 40, 0.9f, unit(rng_)}, {1.f, 0, 1.f, unit(rng_)},
                                   {1.2f, 1000, 0.99f, unit(rng_)}, {0.5f, 0, 0.5f, unit(rng_)}};
  CompareRows(*gpu_, Logits(static_cast<int>(params.size()), vocab, 4.f, false), vocab, params,
              /*exact=*/false);
}

// Penalties, bans, min_p and logprobs on both backends from the same inputs:
// the adjusted logits must be bitwise equal (same float expressions), the
// raw logprobs equal within 1e-5 with the same top ids, greedy rows the same
// token, and sampled rows the same token but for rare near-boundary draws.
TEST_F(CudaSampleTest, PenaltiesMinPAndLogprobsFollowTheCpu) {
  std::uniform_real_distribution<float> unit(0.f, 1.f);
  for (int vocab : {320, 32000}) {
    SCOPED_TRACE("vocab " + std::to_string(vocab));
    const int64_t s = 64;
    std::vector<float> logits = Logits(static_cast<int>(s), vocab, 3.f, /*quantize=*/vocab == 320);
    std::vector<float> temperature, top_p, min_p, uniform, rep, pres, freq;
    std::vector<int32_t> top_k, top_n, seen_offsets{0}, banned_offsets{0}, seen, counts, banned;
    for (int64_t r = 0; r < s; ++r) {
      temperature.push_back(r % 4 == 0 ? 0.f : 0.5f + 0.25f * (r % 5));
      top_k.push_back(r % 3 == 0 ? 0 : 20 + int32_t(r));
      top_p.push_back(r % 5 == 0 ? 0.8f : 1.f);
      min_p.push_back(0.05f * (r % 6));
      uniform.push_back(unit(rng_));
      rep.push_back(r % 2 ? 1.f + 0.1f * (r % 7) : 1.f);
      pres.push_back(r % 3 == 1 ? 0.7f : 0.f);
      freq.push_back(r % 4 == 1 ? -0.4f : 0.3f);
      std::vector<int32_t> ids(vocab);
      std::iota(ids.begin(), ids.end(), 0);
      std::shuffle(ids.begin(), ids.end(), rng_);
      const int n = static_cast<int>(r % 40);
      for (int i = 0; i < n; ++i) seen.push_back(ids[i]), counts.push_back(int32_t(rng_() % 3));
      seen_offsets.push_back(static_cast<int32_t>(seen.size()));
      if (r % 3 == 2) banned.push_back(ids[0]), banned.push_back(ids[n + 1]);  // one seen, one not
      banned_offsets.push_back(static_cast<int32_t>(banned.size()));
      top_n.push_back(r % 7 == 3 ? -1 : static_cast<int32_t>(r % 21));
    }
    const int64_t n = seen.size(), m = banned.size(), k = 20;
    std::vector<float> cpu_logits = logits, saved(n + m), token_lp(s), top_lp(s * k);
    std::vector<int32_t> want(s, -1), top_ids(s * k, -1);
    SampleParams p;
    p.num_rows = static_cast<int>(s);
    p.logits = HostTensor(cpu_logits, {s, vocab});
    p.temperature = HostTensor(temperature, {s});
    p.top_k = HostInts(top_k, {s});
    p.top_p = HostTensor(top_p, {s});
    p.min_p = HostTensor(min_p, {s});
    p.uniform = HostTensor(uniform, {s});
    p.out_tokens = HostInts(want, {s});
    LogitAdjustments& a = p.adjust;
    a.repetition_penalty = HostTensor(rep, {s});
    a.presence_penalty = HostTensor(pres, {s});
    a.frequency_penalty = HostTensor(freq, {s});
    a.seen_offsets = HostInts(seen_offsets, {s + 1});
    a.seen_tokens = HostInts(seen, {n});
    a.seen_counts = HostInts(counts, {n});
    a.banned_offsets = HostInts(banned_offsets, {s + 1});
    a.banned_tokens = HostInts(banned, {m});
    a.saved_logits = HostTensor(saved, {n + m});
    LogprobOutputs& l = p.logprobs;
    l.top_n = HostInts(top_n, {s});
    l.token_logprob = HostTensor(token_lp, {s});
    l.top_ids = HostInts(top_ids, {s, k});
    l.top_logprobs = HostTensor(top_lp, {s, k});
    CpuBackend cpu;
    ASSERT_TRUE(cpu.Sample(p).ok());

    auto dev = [&](std::vector<float>& v, std::vector<int64_t> shape) {
      auto t = std::make_unique<DeviceTensor>(*gpu_, DType::kFloat32, shape);
      t->Set(v);
      return t;
    };
    auto dev_ints = [&](std::vector<int32_t>& v, std::vector<int64_t> shape) {
      auto t = std::make_unique<DeviceTensor>(*gpu_, DType::kInt32, shape);
      t->SetInts(v);
      return t;
    };
    auto d_logits = dev(logits, {s, vocab}), d_t = dev(temperature, {s}), d_p = dev(top_p, {s}),
         d_minp = dev(min_p, {s}), d_u = dev(uniform, {s}), d_rep = dev(rep, {s}),
         d_pres = dev(pres, {s}), d_freq = dev(freq, {s});
    auto d_k = dev_ints(top_k, {s}), d_so = dev_ints(seen_offsets, {s + 1}),
         d_seen = dev_ints(seen, {n}), d_counts = dev_ints(counts, {n}),
         d_bo = dev_ints(banned_offsets, {s + 1}), d_banned = dev_ints(banned, {m}),
         d_top_n = dev_ints(top_n, {s});
    DeviceTensor d_out(*gpu_, DType::kInt32, {s}), d_saved(*gpu_, DType::kFloat32, {n + m}),
        d_token_lp(*gpu_, DType::kFloat32, {s}), d_top_ids(*gpu_, DType::kInt32, {s, k}),
        d_top_lp(*gpu_, DType::kFloat32, {s, k});
    p.logits = *d_logits, p.temperature = *d_t, p.top_k = *d_k, p.top_p = *d_p;
    p.min_p = *d_minp, p.uniform = *d_u, p.out_tokens = d_out;
    a.repetition_penalty = *d_rep, a.presence_penalty = *d_pres, a.frequency_penalty = *d_freq;
    a.seen_offsets = *d_so, a.seen_tokens = *d_seen, a.seen_counts = *d_counts;
    a.banned_offsets = *d_bo, a.banned_tokens = *d_banned, a.saved_logits = d_saved;
    l.top_n = *d_top_n, l.token_logprob = d_token_lp, l.top_ids = d_top_ids, l.top_logprobs = d_top_lp;
    ASSERT_TRUE(gpu_->Sample(p).ok());

    const std::vector<float> gpu_logits = d_logits->Get();
    for (int64_t i = 0; i < s * vocab; ++i) {
      ASSERT_EQ(gpu_logits[i], cpu_logits[i]) << "adjusted logit " << i % vocab << " of row " << i / vocab;
    }
    const std::vector<int32_t> got = d_out.GetInts(), got_ids = d_top_ids.GetInts();
    const std::vector<float> got_lp = d_token_lp.Get(), got_top_lp = d_top_lp.Get();
    int differing = 0;
    for (int64_t r = 0; r < s; ++r) {
      if (temperature[r] <= 0.f) {
        ASSERT_EQ(got[r], want[r]) << "greedy row " << r;
      } else if (got[r] != want[r]) {
        ++differing;
        continue;  // a near-boundary draw: its logprob is of another token
      }
      if (top_n[r] < 0) continue;
      EXPECT_NEAR(got_lp[r], token_lp[r], 1e-5) << "row " << r;
      for (int i = 0; i < top_n[r]; ++i) {
        EXPECT_EQ(got_ids[r * k + i], top_ids[r * k + i]) << "row " << r << " rank " << i;
        EXPECT_NEAR(got_top_lp[r * k + i], top_lp[r * k + i], 1e-5) << "row " << r << " rank " << i;
      }
    }
    EXPECT_LE(differing, 1) << differing << " sampled rows differ from the CPU";
  }
}

}  // namespace
}  // namespace kvserve::testing

namespace kvserve::testing {
namespace {

// Structured outputs' MaskLogits: the GPU op against the CPU's on the same
// logits and bit masks (a subset of the rows, vocabularies that do and do
// not fill the last 32-bit word): bit-identical, masked entries −∞, the
// others untouched.
TEST_F(CudaSampleTest, MaskLogitsMatchesTheCpu) {
  CpuBackend cpu;
  for (int vocab : {320, 1000, 128256}) {
    SCOPED_TRACE("vocab " + std::to_string(vocab));
    const int rows = 6, words = (vocab + 31) / 32;
    std::vector<float> logits = Logits(rows, vocab, 3.f, false);
    std::vector<int32_t> masked_rows = {4, 0, 2};
    std::vector<int32_t> masks(masked_rows.size() * words);
    for (size_t i = 0; i < masks.size(); ++i) masks[i] = static_cast<int32_t>(rng_());
    masks[words - 1] = -1;  // bits past the vocabulary set: must be ignored

    std::vector<float> want = logits;
    MaskLogitsParams c;
    c.logits = HostTensor(want, {rows, vocab});
    c.rows = HostInts(masked_rows, {3});
    c.masks = HostInts(masks, {3, words});
    ASSERT_TRUE(cpu.MaskLogits(c).ok());

    DeviceTensor d_logits(*gpu_, DType::kFloat32, {rows, vocab});
    DeviceTensor d_rows(*gpu_, DType::kInt32, {3}), d_masks(*gpu_, DType::kInt32, {3, words});
    d_logits.Set(logits);
    d_rows.SetInts(masked_rows);
    d_masks.SetInts(masks);
    MaskLogitsParams g;
    g.logits = d_logits, g.rows = d_rows, g.masks = d_masks;
    ASSERT_TRUE(gpu_->MaskLogits(g).ok());
    const std::vector<float> got = d_logits.Get();
    int masked = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(std::isinf(got[i]), std::isinf(want[i])) << "entry " << i;
      if (std::isinf(want[i])) {
        ++masked;
      } else {
        ASSERT_EQ(got[i], want[i]) << "entry " << i;
      }
    }
    EXPECT_GT(masked, vocab / 2);  // ~half of three rows' entries
  }
}

}  // namespace
}  // namespace kvserve::testing
