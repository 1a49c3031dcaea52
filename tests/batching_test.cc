// Continuous batching must be invisible to each request:
//   - padding masks are exact: fixture and random prompts submitted together,
//     in shuffled orders and mixed with other requests, give the same greedy
//     tokens and logits (max abs error < 1e-4, fp32) as each prompt alone;
//   - preemption is invisible: with a KV pool so small that sequences are
//     preempted and recomputed, every request produces exactly the tokens it
//     produces with a large pool.
#include <algorithm>
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

INSTANTIATE_TEST_SUITE_P(Fixtures, BatchingTest,
                         ::testing::Values("tiny-llama-gqa", "tiny-llama-mha-d128"));

}  // namespace
}  // namespace kvserve::testing
