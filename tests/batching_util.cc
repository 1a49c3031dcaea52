#include "tests/batching_util.h"

#include <algorithm>
#include <numeric>
#include <random>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/engine_test_util.h"
#include "tests/golden_util.h"
#include "tests/test_paths.h"

namespace kvserve::testing {

std::vector<std::vector<int32_t>> FixtureAndRandomPrompts(const std::string& fixture,
                                                          int num_random, int vocab,
                                                          uint32_t seed) {
  std::vector<std::vector<int32_t>> prompts;
  for (const GoldenCase& c : LoadGolden(FixtureDir(fixture) + "/golden.json")) prompts.push_back(c.prompt);
  std::mt19937 rng(seed);
  for (int i = 0; i < num_random; ++i) {
    std::vector<int32_t> p(1 + rng() % 90);
    for (int32_t& t : p) t = static_cast<int32_t>(rng() % vocab);
    prompts.push_back(std::move(p));
  }
  return prompts;
}

void ExpectBatchedEqualsAlone(Engine& engine, const std::vector<std::vector<int32_t>>& prompts,
                              uint32_t new_tokens, int rounds, float max_abs_error,
                              uint32_t seed) {
  ExpectBatchedEqualsReference(engine, engine, prompts, new_tokens, rounds, max_abs_error, seed);
}

void ExpectBatchedEqualsReference(Engine& reference, Engine& engine,
                                  const std::vector<std::vector<int32_t>>& prompts,
                                  uint32_t new_tokens, int rounds, float max_abs_error,
                                  uint32_t seed) {
  const int vocab = engine.info().vocab_size;
  std::vector<std::shared_ptr<CollectingSink>> alone;
  for (const auto& p : prompts) {
    alone.push_back(RunToCompletion(reference, GreedyRequest(p, new_tokens, /*capture_logits=*/true)));
    ASSERT_TRUE(alone.back()->status.ok()) << alone.back()->status;
  }
  std::mt19937 rng(seed);
  for (int round = 0; round < rounds; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    std::vector<int> order(prompts.size());
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    std::vector<std::shared_ptr<CollectingSink>> sinks(prompts.size()), others;
    for (int i : order) {
      // Other traffic in between: sampled requests of other lengths.
      Request other = GreedyRequest({int32_t(rng() % vocab), int32_t(rng() % vocab)}, 1 + rng() % 20);
      other.sampling.temperature = 0.9f;
      other.sampling.top_p = 0.9f;
      other.sampling.seed = rng();
      others.push_back(std::make_shared<CollectingSink>());
      ASSERT_TRUE(engine.Submit(other, others.back()).ok());
      sinks[i] = std::make_shared<CollectingSink>();
      ASSERT_TRUE(engine.Submit(GreedyRequest(prompts[i], new_tokens, true), sinks[i]).ok());
    }
    for (auto& s : others) ASSERT_TRUE(s->WaitDone());
    for (size_t i = 0; i < prompts.size(); ++i) {
      ASSERT_TRUE(sinks[i]->WaitDone());
      ASSERT_TRUE(sinks[i]->status.ok()) << sinks[i]->status;
      EXPECT_THAT(sinks[i]->tokens, ::testing::ElementsAreArray(alone[i]->tokens)) << "prompt " << i;
      ASSERT_EQ(sinks[i]->logits.size(), alone[i]->logits.size());
      for (size_t step = 0; step < alone[i]->logits.size(); ++step) {
        ASSERT_LT(MaxAbsDiff(sinks[i]->logits[step], alone[i]->logits[step]), max_abs_error)
            << "prompt " << i << " step " << step;
      }
    }
  }
  EXPECT_EQ(engine.num_used_blocks(), 0);
  EXPECT_EQ(reference.num_used_blocks(), 0);
}

}  // namespace kvserve::testing
