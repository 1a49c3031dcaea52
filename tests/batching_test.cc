// Continuous batching must be invisible to each request:
//   - padding masks are exact: fixture and random prompts submitted together,
//     in shuffled orders and mixed with other requests, give the same greedy
//     tokens and logits (max abs error < 1e-4, fp32) as each prompt alone;
//   - preemption is invisible: with a KV pool so small that sequences are
//     preempted and recomputed, every request produces exactly the tokens it
//     produces with a large pool.
#include <algorithm>
#include <numeric>
#include <random>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/batching_util.h"
#include "tests/engine_test_util.h"
#include "tests/golden_util.h"
#include "tests/test_paths.h"

namespace kvserve::testing {
namespace {

class BatchingTest : public ::testing::TestWithParam<std::string> {};

TEST_P(BatchingTest, PaddingMasksAreExact) {
  const std::string fixture = GetParam();
  EngineConfig config;
  config.max_num_batched_tokens = 96;  // long prompts are chunked and mixed with decodes
  TestEngine t = MakeCpuEngine(FixtureDir(fixture), config);
  ASSERT_NE(t.engine, nullptr);
  ExpectBatchedEqualsAlone(*t.engine,
                           FixtureAndRandomPrompts(fixture, 7, t.engine->info().vocab_size, 11),
                           /*new_tokens=*/16, /*rounds=*/3, /*max_abs_error=*/1e-4f, /*seed=*/5);
}

TEST_P(BatchingTest, PreemptionIsInvisible) {
  const std::string fixture = GetParam();
  constexpr uint32_t kNewTokens = 40;
  TestEngine big = MakeCpuEngine(FixtureDir(fixture));
  ASSERT_NE(big.engine, nullptr);
  const int vocab = big.engine->info().vocab_size;
  auto prompts = FixtureAndRandomPrompts(fixture, /*num_random=*/5, vocab, 23);
  prompts.erase(prompts.begin() + 4);  // the 130-token prompt alone needs 11 of the 12 blocks
  // A seeded sampled request too: its RNG must survive preemption.
  auto request = [&](size_t i) {
    Request r = GreedyRequest(prompts[i], kNewTokens);
    if (i % 3 == 2) {
      r.sampling.temperature = 0.8f;
      r.sampling.top_k = 40;
      r.sampling.seed = 1000 + i;
    }
    return r;
  };
  std::vector<std::vector<int32_t>> expected;
  for (size_t i = 0; i < prompts.size(); ++i) expected.push_back(RunToCompletion(*big.engine, request(i))->tokens);

  EngineConfig small;
  small.num_kv_blocks = 12;  // 192 tokens for sequences needing up to ~130 each
  small.max_num_batched_tokens = 64;
  TestEngine t = MakeCpuEngine(FixtureDir(fixture), small);
  ASSERT_NE(t.engine, nullptr);
  std::vector<std::shared_ptr<CollectingSink>> sinks;
  for (size_t i = 0; i < prompts.size(); ++i) {
    sinks.push_back(std::make_shared<CollectingSink>());
    ASSERT_TRUE(t.engine->Submit(request(i), sinks.back()).ok());
  }
  for (size_t i = 0; i < prompts.size(); ++i) {
    ASSERT_TRUE(sinks[i]->WaitDone());
    ASSERT_TRUE(sinks[i]->status.ok()) << sinks[i]->status;
    EXPECT_THAT(sinks[i]->tokens, ::testing::ElementsAreArray(expected[i])) << "prompt " << i;
  }
  EXPECT_GT(MetricValue(*t.registry, "kvserve_preemptions_total"), 0) << "the pool was too large to preempt";
  EXPECT_EQ(t.engine->num_used_blocks(), 0);
}

// Same seed, same tokens in any batch, with every sampling control on:
// penalties (whose token lists differ per row), min_p, min_new_tokens and
// logprobs, each request alone and then all at once in shuffled orders.
TEST_P(BatchingTest, SampledRequestsWithEveryControlAreBatchInvariant) {
  const std::string fixture = GetParam();
  EngineConfig config;
  config.max_num_batched_tokens = 96;
  TestEngine t = MakeCpuEngine(FixtureDir(fixture), config);
  ASSERT_NE(t.engine, nullptr);
  const int vocab = t.engine->info().vocab_size;
  const auto prompts = FixtureAndRandomPrompts(fixture, /*num_random=*/6, vocab, 31);
  auto request = [&](size_t i) {
    Request r = GreedyRequest(prompts[i], 16);
    r.sampling.temperature = 0.7f + 0.1f * (i % 3);
    r.sampling.top_k = i % 2 ? 50 : 0;
    r.sampling.top_p = i % 3 ? 0.95f : 1.f;
    r.sampling.min_p = 0.05f * (i % 4);
    r.sampling.repetition_penalty = 1.f + 0.2f * (i % 3);
    r.sampling.presence_penalty = i % 2 ? 0.5f : 0.f;
    r.sampling.frequency_penalty = i % 4 == 1 ? 0.8f : 0.f;
    r.sampling.min_new_tokens = i % 5;
    r.stopping.ignore_eos = i % 2 == 0;
    if (i % 2) r.sampling.logprobs = static_cast<uint32_t>(i % 21);
    r.sampling.seed = 500 + i;
    return r;
  };
  std::vector<std::shared_ptr<CollectingSink>> alone;
  for (size_t i = 0; i < prompts.size(); ++i) alone.push_back(RunToCompletion(*t.engine, request(i)));
  std::mt19937 rng(8);
  for (int round = 0; round < 2; ++round) {
    std::vector<size_t> order(prompts.size());
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    std::vector<std::shared_ptr<CollectingSink>> sinks(prompts.size());
    for (size_t i : order) {
      sinks[i] = std::make_shared<CollectingSink>();
      ASSERT_TRUE(t.engine->Submit(request(i), sinks[i]).ok());
    }
    for (size_t i = 0; i < prompts.size(); ++i) {
      ASSERT_TRUE(sinks[i]->WaitDone());
      ASSERT_TRUE(sinks[i]->status.ok()) << sinks[i]->status;
      EXPECT_THAT(sinks[i]->tokens, ::testing::ElementsAreArray(alone[i]->tokens))
          << "round " << round << " prompt " << i;
      ASSERT_EQ(sinks[i]->logprobs.size(), alone[i]->logprobs.size());
      for (size_t k = 0; k < alone[i]->logprobs.size(); ++k) {
        EXPECT_NEAR(sinks[i]->logprobs[k].token.logprob, alone[i]->logprobs[k].token.logprob, 1e-4);
        ASSERT_EQ(sinks[i]->logprobs[k].top.size(), alone[i]->logprobs[k].top.size());
      }
    }
  }
  EXPECT_EQ(t.engine->num_used_blocks(), 0);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, BatchingTest,
                         ::testing::Values("tiny-llama-gqa", "tiny-llama-mha-d128"));

}  // namespace
}  // namespace kvserve::testing
