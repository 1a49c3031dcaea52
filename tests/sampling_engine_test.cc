// The sampling controls through the engine on a real model (tiny-llama-gqa
// on the CPU backend), checked against values computed here from the logits
// the engine captured (raw: before any penalty):
//   - penalties change greedy decoding exactly as the formulas predict, step
//     by step, over the prompt and the tokens generated so far;
//   - min_new_tokens keeps a stop token id from ending the request early;
//   - logprobs: the sampled token's equals log_softmax of the logits, the
//     top 20 are the 20 largest logits in order, 21 is refused by name.
#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/engine_test_util.h"
#include "tests/test_paths.h"

namespace kvserve::testing {
namespace {

using ::testing::HasSubstr;

class SamplingEngineTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { t_ = new TestEngine(MakeCpuEngine(FixtureDir("tiny-llama-gqa"))); }
  static void TearDownTestSuite() {
    delete t_;
    t_ = nullptr;
  }
  Engine& engine() { return *t_->engine; }
  void TearDown() override { EXPECT_EQ(engine().num_used_blocks(), 0); }

  static TestEngine* t_;
};
TestEngine* SamplingEngineTest::t_ = nullptr;

int32_t ArgMax(const std::vector<float>& row) {
  return static_cast<int32_t>(std::max_element(row.begin(), row.end()) - row.begin());
}

TEST_F(SamplingEngineTest, PenaltiesChangeGreedyDecodingAsTheFormulasPredict) {
  const std::vector<int32_t> prompt = {168, 5, 6, 7, 164};
  constexpr uint32_t kTokens = 20;
  auto plain = RunToCompletion(engine(), GreedyRequest(prompt, kTokens));
  struct Case {
    float rep, pres, freq;
  };
  for (const Case& c : {Case{1.8f, 0.f, 0.f}, Case{1.f, 1.5f, 0.f}, Case{1.f, 0.f, 0.7f},
                        Case{1.3f, 0.4f, 0.6f}}) {
    SCOPED_TRACE(::testing::Message() << "rep " << c.rep << " pres " << c.pres << " freq " << c.freq);
    Request r = GreedyRequest(prompt, kTokens, /*capture_logits=*/true);
    r.sampling.repetition_penalty = c.rep;
    r.sampling.presence_penalty = c.pres;
    r.sampling.frequency_penalty = c.freq;
    auto sink = RunToCompletion(engine(), r);
    ASSERT_TRUE(sink->status.ok()) << sink->status;
    ASSERT_EQ(sink->tokens.size(), kTokens);
    std::map<int32_t, int> generated;  // the repetition penalty sees the prompt too (count 0)
    for (int32_t t : prompt) generated[t];
    for (uint32_t step = 0; step < kTokens; ++step) {
      std::vector<float> row = sink->logits[step];
      for (auto [t, count] : generated) {
        float x = row[t];
        x = x > 0.f ? x / c.rep : x * c.rep;
        if (count > 0) x -= c.freq * count + c.pres;
        row[t] = x;
      }
      ASSERT_EQ(sink->tokens[step], ArgMax(row)) << "step " << step;
      ++generated[sink->tokens[step]];
    }
    EXPECT_NE(sink->tokens, plain->tokens) << "the penalty changed nothing: the test proves nothing";
  }
}

TEST_F(SamplingEngineTest, MinNewTokensKeepsAStopTokenFromEndingEarly) {
  // Greedy decoding of {168} starts 164, 164, ... (tests/server_test.cc).
  Request stops = GreedyRequest({168}, 16);
  stops.stopping.stop_token_ids = {164};
  auto early = RunToCompletion(engine(), stops);
  ASSERT_THAT(early->tokens, ::testing::ElementsAre(164));
  EXPECT_EQ(early->finish_reason, FinishReason::kStop);

  stops.sampling.min_new_tokens = 6;
  auto late = RunToCompletion(engine(), stops);
  ASSERT_TRUE(late->status.ok()) << late->status;
  ASSERT_GE(late->tokens.size(), 6u);
  for (int i = 0; i < 6; ++i) EXPECT_NE(late->tokens[i], 164) << "token " << i;
  if (late->finish_reason == FinishReason::kStop) {
    EXPECT_EQ(late->tokens.back(), 164);
  }

  // The model's EOS ids are masked the same way (ignore_eos off).
  Request eos = GreedyRequest({168}, 8);
  eos.stopping.ignore_eos = false;
  eos.sampling.min_new_tokens = 8;
  eos.sampling.logprobs = 0;
  auto full = RunToCompletion(engine(), eos);
  ASSERT_TRUE(full->status.ok()) << full->status;
  EXPECT_EQ(full->tokens.size(), 8u);
  EXPECT_EQ(full->finish_reason, FinishReason::kLength);
  for (int32_t t : full->tokens) EXPECT_THAT(engine().info().eos_token_ids, ::testing::Not(::testing::Contains(t)));
}

TEST_F(SamplingEngineTest, LogprobsAreLogSoftmaxOfTheLogitsWithTheTopTwentySorted) {
  Request r = GreedyRequest({9, 8, 7, 6}, 12, /*capture_logits=*/true);
  r.sampling.temperature = 0.9f;
  r.sampling.top_k = 30;
  r.sampling.seed = 17;
  r.sampling.repetition_penalty = 1.4f;  // logprobs stay those of the raw logits
  r.sampling.logprobs = 20;
  auto sink = RunToCompletion(engine(), r);
  ASSERT_TRUE(sink->status.ok()) << sink->status;
  ASSERT_EQ(sink->logprobs.size(), 12u);
  for (size_t step = 0; step < 12; ++step) {
    SCOPED_TRACE(::testing::Message() << "step " << step);
    const std::vector<float>& row = sink->logits[step];
    const double max = *std::max_element(row.begin(), row.end());
    double sum = 0;
    for (float x : row) sum += std::exp(x - max);
    const double lse = max + std::log(sum);
    const TokenLogprobs& l = sink->logprobs[step];
    EXPECT_EQ(l.token.token_id, sink->tokens[step]);
    EXPECT_NEAR(l.token.logprob, row[sink->tokens[step]] - lse, 1e-5);
    std::vector<int32_t> order(row.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return row[a] > row[b]; });
    ASSERT_EQ(l.top.size(), 20u);
    for (int i = 0; i < 20; ++i) {
      EXPECT_EQ(l.top[i].token_id, order[i]) << "rank " << i;
      EXPECT_NEAR(l.top[i].logprob, row[order[i]] - lse, 1e-5);
      if (i > 0) {
        EXPECT_GE(l.top[i - 1].logprob, l.top[i].logprob);
      }
    }
  }
}

TEST_F(SamplingEngineTest, OutOfRangeControlsAreRefusedByName) {
  struct Bad {
    std::function<void(Request&)> set;
    std::string message;
  };
  const std::vector<Bad> cases = {
      {[](Request& r) { r.sampling.logprobs = 21; }, "sampling.logprobs must be in [0, 20], got 21"},
      {[](Request& r) { r.sampling.min_p = 1.5f; }, "sampling.min_p must be in [0, 1], got 1.5"},
      {[](Request& r) { r.sampling.min_p = NAN; }, "sampling.min_p"},
      {[](Request& r) { r.sampling.repetition_penalty = -1.f; }, "sampling.repetition_penalty"},
      {[](Request& r) { r.sampling.repetition_penalty = INFINITY; }, "sampling.repetition_penalty"},
      {[](Request& r) { r.sampling.presence_penalty = -2.5f; }, "sampling.presence_penalty must be in [-2, 2]"},
      {[](Request& r) { r.sampling.frequency_penalty = NAN; }, "sampling.frequency_penalty"},
      {[](Request& r) { r.sampling.min_new_tokens = 9; }, "sampling.min_new_tokens (9) must be <= stopping.max_new_tokens (8)"},
  };
  for (const Bad& c : cases) {
    Request r = GreedyRequest({1, 2, 3}, 8);
    c.set(r);
    const absl::Status s = engine().Submit(r, std::make_shared<CollectingSink>());
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.message;
    EXPECT_THAT(std::string(s.message()), HasSubstr(c.message));
  }
  Request edge = GreedyRequest({1, 2, 3}, 8);
  edge.sampling.logprobs = 20;
  edge.sampling.min_p = 1.f;
  edge.sampling.presence_penalty = -2.f;
  edge.sampling.min_new_tokens = 8;
  auto sink = RunToCompletion(engine(), edge);
  EXPECT_TRUE(sink->status.ok()) << sink->status;
  EXPECT_EQ(sink->tokens.size(), 8u);
}

}  // namespace
}  // namespace kvserve::testing
