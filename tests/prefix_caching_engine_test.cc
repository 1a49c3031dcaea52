// Prefix caching through the engine on the CPU backend, against the same
// engine with caching off:
//   - a second request sharing a prefix computes only its suffix (the
//     kvserve_prefix_cache_* counters) and gives the same tokens and logits;
//   - shuffled concurrent traffic with shared prefixes gives, with caching on,
//     the tokens (and logits within 1e-4) each prompt gives alone with it off;
//   - with a pool so small that sequences are preempted, outputs are those of
//     a large pool without caching;
//   - finished and cancelled requests leave no block in use.
#include <random>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/batching_util.h"
#include "tests/engine_test_util.h"
#include "tests/golden_util.h"
#include "tests/test_paths.h"

namespace kvserve::testing {
namespace {

constexpr char kFixture[] = "tiny-llama-gqa";

std::vector<int32_t> RandomTokens(int n, int vocab, std::mt19937& rng) {
  std::vector<int32_t> t(n);
  for (int32_t& id : t) id = static_cast<int32_t>(rng() % vocab);
  return t;
}

std::vector<int32_t> Concat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TestEngine MakeEngine(bool prefix_caching, EngineConfig config = {}) {
  config.enable_prefix_caching = prefix_caching;
  return MakeCpuEngine(FixtureDir(kFixture), config);
}

TEST(PrefixCachingEngineTest, ASecondRequestWithTheSamePrefixComputesOnlyItsSuffix) {
  TestEngine on = MakeEngine(true), off = MakeEngine(false);
  ASSERT_NE(on.engine, nullptr);
  ASSERT_NE(off.engine, nullptr);
  std::mt19937 rng(3);
  const int vocab = on.engine->info().vocab_size;
  const auto prefix = RandomTokens(100, vocab, rng);
  const auto first = Concat(prefix, {5, 6, 7}), second = Concat(prefix, {8, 9});

  ASSERT_TRUE(RunToCompletion(*on.engine, GreedyRequest(first, 4))->status.ok());
  EXPECT_EQ(MetricValue(*on.registry, "kvserve_prefix_cache_queries_total"), 103);
  EXPECT_EQ(MetricValue(*on.registry, "kvserve_prefix_cache_hits_total"), 0);

  auto warm = RunToCompletion(*on.engine, GreedyRequest(second, 8, /*capture_logits=*/true));
  ASSERT_TRUE(warm->status.ok()) << warm->status;
  EXPECT_EQ(MetricValue(*on.registry, "kvserve_prefix_cache_queries_total"), 103 + 102);
  EXPECT_EQ(MetricValue(*on.registry, "kvserve_prefix_cache_hits_total"), 96)
      << "the 6 full blocks of the shared 100 tokens";

  auto cold = RunToCompletion(*off.engine, GreedyRequest(second, 8, true));
  ASSERT_TRUE(cold->status.ok()) << cold->status;
  EXPECT_THAT(warm->tokens, ::testing::ElementsAreArray(cold->tokens));
  ASSERT_EQ(warm->logits.size(), cold->logits.size());
  for (size_t i = 0; i < cold->logits.size(); ++i) {
    EXPECT_LT(MaxAbsDiff(warm->logits[i], cold->logits[i]), 1e-4f) << "step " << i;
  }
  EXPECT_EQ(MetricValue(*off.registry, "kvserve_prefix_cache_hits_total"), 0);
  EXPECT_EQ(on.engine->num_used_blocks(), 0);
}

TEST(PrefixCachingEngineTest, ShuffledConcurrentTrafficMatchesCachingOff) {
  EngineConfig config;
  config.max_num_batched_tokens = 96;  // long prompts are chunked and mixed with decodes
  TestEngine on = MakeEngine(true, config), off = MakeEngine(false, config);
  ASSERT_NE(on.engine, nullptr);
  ASSERT_NE(off.engine, nullptr);
  const int vocab = on.engine->info().vocab_size;
  auto prompts = FixtureAndRandomPrompts(kFixture, 4, vocab, 11);
  std::mt19937 rng(17);
  const auto system = RandomTokens(40, vocab, rng);
  for (int i = 0; i < 6; ++i)
    prompts.push_back(Concat(system, RandomTokens(1 + rng() % 30, vocab, rng)));
  prompts.push_back(system);  // the shared prefix itself: its last token is computed
  ExpectBatchedEqualsReference(*off.engine, *on.engine, prompts, /*new_tokens=*/16, /*rounds=*/3,
                               /*max_abs_error=*/1e-4f, /*seed=*/5);
  EXPECT_GT(MetricValue(*on.registry, "kvserve_prefix_cache_hits_total"), 0);
}

TEST(PrefixCachingEngineTest, PreemptionWithSharedPrefixesMatchesALargePoolWithoutCaching) {
  constexpr uint32_t kNewTokens = 40;
  TestEngine big = MakeEngine(false);
  ASSERT_NE(big.engine, nullptr);
  const int vocab = big.engine->info().vocab_size;
  std::mt19937 rng(29);
  const auto system = RandomTokens(32, vocab, rng);
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 6; ++i)
    prompts.push_back(Concat(system, RandomTokens(1 + rng() % 20, vocab, rng)));
  auto request = [&](size_t i) {
    Request r = GreedyRequest(prompts[i], kNewTokens);
    if (i % 3 == 2) {  // a seeded sampled request: its RNG must survive preemption
      r.sampling.temperature = 0.8f;
      r.sampling.top_k = 40;
      r.sampling.seed = 1000 + i;
    }
    return r;
  };
  std::vector<std::vector<int32_t>> expected;
  for (size_t i = 0; i < prompts.size(); ++i)
    expected.push_back(RunToCompletion(*big.engine, request(i))->tokens);

  EngineConfig small;
  small.num_kv_blocks = 12;  // 192 tokens for sequences needing up to 92 each
  small.max_num_batched_tokens = 64;
  TestEngine t = MakeEngine(true, small);
  ASSERT_NE(t.engine, nullptr);
  for (int round = 0; round < 2; ++round) {  // the second round starts from a warm cache
    SCOPED_TRACE("round " + std::to_string(round));
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
    EXPECT_EQ(t.engine->num_used_blocks(), 0);
  }
  EXPECT_GT(MetricValue(*t.registry, "kvserve_preemptions_total"), 0)
      << "the pool was too large to preempt";
  EXPECT_GT(MetricValue(*t.registry, "kvserve_prefix_cache_hits_total"), 0);
}

TEST(PrefixCachingEngineTest, CancelledRequestsLeaveNoBlockInUse) {
  TestEngine t = MakeEngine(true);
  ASSERT_NE(t.engine, nullptr);
  std::mt19937 rng(41);
  const int vocab = t.engine->info().vocab_size;
  const auto system = RandomTokens(50, vocab, rng);
  ASSERT_TRUE(RunToCompletion(*t.engine, GreedyRequest(Concat(system, {1}), 2))->status.ok());
  std::vector<std::shared_ptr<CollectingSink>> sinks;
  for (int i = 0; i < 4; ++i) {
    sinks.push_back(std::make_shared<CollectingSink>());
    ASSERT_TRUE(t.engine->Submit(GreedyRequest(Concat(system, {i + 2}), 400), sinks.back()).ok());
  }
  for (auto& s : sinks) s->Cancel();
  t.engine->Wake();
  for (auto& s : sinks) {
    ASSERT_TRUE(s->WaitDone());
    EXPECT_EQ(s->status.code(), absl::StatusCode::kCancelled) << s->status;
  }
  EXPECT_EQ(t.engine->num_used_blocks(), 0);
  // The cache still serves the prefix afterwards.
  const double hits = MetricValue(*t.registry, "kvserve_prefix_cache_hits_total");
  ASSERT_TRUE(RunToCompletion(*t.engine, GreedyRequest(Concat(system, {9}), 2))->status.ok());
  EXPECT_EQ(MetricValue(*t.registry, "kvserve_prefix_cache_hits_total"), hits + 48);
  EXPECT_EQ(t.engine->num_used_blocks(), 0);
}

}  // namespace
}  // namespace kvserve::testing
