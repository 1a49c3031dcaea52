// The model runner's own state (RunnerState), built only from ScheduleOutput
// messages, must equal the scheduler's after every step:
//   - driven by a Scheduler alone (no model), step by step, across
//     preemption and recomputation, prefix-cache hits and removals;
//   - through the engine with EngineConfig::verify_runner_state on (a
//     mismatch fails the step's requests with INTERNAL), under preemption
//     with shared prefixes, cancellation and stop strings; the tokens are
//     those of a large pool.
#include "engine/core/runner_state.h"

#include <random>

#include "engine/core/runner_state_check.h"
#include "engine/core/scheduler.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/engine_test_util.h"
#include "tests/test_paths.h"

namespace kvserve::testing {
namespace {

using ::testing::ElementsAre;

TEST(RunnerStateTest, FollowsTheSchedulerThroughPreemptionPrefixHitsAndRemoval) {
  constexpr int kBlockSize = 4, kMaxSeqs = 4;
  BlockManager blocks(/*num_blocks=*/9, kBlockSize, /*enable_prefix_caching=*/true);
  SchedulerConfig config;
  config.max_num_seqs = kMaxSeqs;
  config.max_num_batched_tokens = 12;
  Scheduler scheduler(config, blocks);
  RunnerState state(kMaxSeqs, /*max_blocks_per_seq=*/16);
  std::mt19937 rng(7);
  const std::vector<int32_t> shared = {1, 2, 3, 4, 5, 6, 7, 8};  // two full blocks
  SeqId next_id = 1;
  int preemptions = 0, hits = 0, removed = 0;
  for (int step = 0; step < 400 && (step < 40 || scheduler.HasWork()); ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    if (step < 40 && step % 2 == 0) {
      std::vector<int32_t> prompt = shared;
      for (int i = 0, n = 1 + static_cast<int>(rng() % 9); i < n; ++i) prompt.push_back(20 + rng() % 50);
      scheduler.Add(std::make_unique<Sequence>(next_id++, prompt));
    }
    const ScheduleOutput out = scheduler.Schedule();
    preemptions += static_cast<int>(out.preempted.size());
    hits += out.prefix_cache_hit_tokens;
    ASSERT_TRUE(state.Apply(out).ok()) << state.Apply(out);
    ASSERT_TRUE(VerifyRunnerState(scheduler, state).ok()) << VerifyRunnerState(scheduler, state);
    for (const ScheduledChunk& c : out.chunks) {
      if (!c.samples) continue;
      scheduler.AppendToken(c.seq_id, static_cast<int32_t>(100 + rng() % 50));
      // Finish after 6 to 11 generated tokens; sometimes abort a sequence mid-prompt.
      const Sequence& seq = *scheduler.Get(c.seq_id);
      if (seq.num_tokens() - seq.prompt_len >= 6 + static_cast<int>(c.seq_id % 6)) {
        scheduler.Remove(c.seq_id);
        ++removed;
      }
    }
    if (step % 13 == 5 && !scheduler.waiting().empty()) {
      scheduler.Remove(scheduler.waiting().back());  // aborted while waiting (maybe preempted)
      ++removed;
    }
  }
  EXPECT_FALSE(scheduler.HasWork());
  // The last removals reach the runner with the next step's schedule.
  ASSERT_TRUE(state.Apply(scheduler.Schedule()).ok());
  EXPECT_EQ(state.num_sequences(), 0);
  EXPECT_EQ(blocks.num_used_blocks(), 0);
  EXPECT_GT(preemptions, 0) << "the pool was too large to preempt";
  EXPECT_GT(hits, 0) << "no prefix-cache hit";
  EXPECT_EQ(removed, static_cast<int>(next_id) - 1);
}

// The messages themselves, step by step: a sequence's data once, then only
// what changed (the sampled token, a block when one is appended), then its id
// in `finished` after removal.
TEST(RunnerStateTest, ScheduleOutputSendsDataOnceThenDeltas) {
  BlockManager blocks(/*num_blocks=*/4, /*block_size=*/4);
  SchedulerConfig config;
  config.max_num_seqs = 2;
  config.max_num_batched_tokens = 8;
  Scheduler scheduler(config, blocks);
  scheduler.Add(std::make_unique<Sequence>(1, std::vector<int32_t>{1, 2, 3}));
  scheduler.Add(std::make_unique<Sequence>(2, std::vector<int32_t>{4, 5, 6}));

  ScheduleOutput s1 = scheduler.Schedule();
  ASSERT_EQ(s1.new_seqs.size(), 2u);
  EXPECT_EQ(s1.new_seqs[0].seq_id, 1u);
  EXPECT_THAT(s1.new_seqs[0].tokens, ElementsAre(1, 2, 3));
  EXPECT_EQ(s1.new_seqs[0].prompt_len, 3);
  EXPECT_EQ(s1.new_seqs[0].block_ids.size(), 1u);
  EXPECT_EQ(s1.new_seqs[0].num_computed, 0);
  EXPECT_EQ(s1.cached_seqs.size(), 0);
  scheduler.AppendToken(1, 100);
  scheduler.AppendToken(2, 101);

  ScheduleOutput s2 = scheduler.Schedule();  // position 3: still in the first block
  EXPECT_TRUE(s2.new_seqs.empty());
  ASSERT_EQ(s2.cached_seqs.size(), 2);
  EXPECT_THAT(s2.cached_seqs.NewTokens(0), ElementsAre(100));
  EXPECT_THAT(s2.cached_seqs.NewTokens(1), ElementsAre(101));
  EXPECT_TRUE(s2.cached_seqs.NewBlocks(0).empty());
  EXPECT_EQ(s2.cached_seqs.num_computed[0], 3);
  scheduler.AppendToken(1, 102);
  scheduler.AppendToken(2, 103);

  ScheduleOutput s3 = scheduler.Schedule();  // position 4: a second block each
  ASSERT_EQ(s3.cached_seqs.size(), 2);
  EXPECT_THAT(s3.cached_seqs.NewTokens(0), ElementsAre(102));
  EXPECT_EQ(s3.cached_seqs.NewBlocks(0).size(), 1u);
  EXPECT_EQ(s3.cached_seqs.NewBlocks(1).size(), 1u);
  scheduler.AppendToken(1, 104);
  scheduler.AppendToken(2, 105);
  scheduler.Remove(2);

  ScheduleOutput s4 = scheduler.Schedule();
  EXPECT_THAT(s4.finished, ElementsAre(2u));
  ASSERT_EQ(s4.cached_seqs.size(), 1);
  EXPECT_EQ(s4.cached_seqs.seq_ids[0], 1u);
  EXPECT_THAT(s4.cached_seqs.NewTokens(0), ElementsAre(104));
  scheduler.Remove(1);
  EXPECT_EQ(blocks.num_used_blocks(), 0);
}

TEST(RunnerStateTest, MessagesThatDoNotFitTheStateAreInternalErrors) {
  RunnerState state(/*max_seqs=*/1, /*max_blocks_per_seq=*/2);
  ScheduleOutput unknown;
  unknown.chunks.push_back({5, 0, 1, true});
  EXPECT_THAT(state.Apply(unknown).message(), ::testing::HasSubstr("does not hold"));

  ScheduleOutput too_wide;
  NewSequenceData& d = too_wide.new_seqs.emplace_back();
  d.seq_id = 1;
  d.tokens = {1, 2};
  d.prompt_len = 2;
  d.block_ids = {0, 1, 2};
  EXPECT_THAT(state.Apply(too_wide).message(), ::testing::HasSubstr("max_blocks_per_seq 2"));
}

// Engine scenarios, with the runner's state checked after every step.
EngineConfig Checked(EngineConfig config) {
  config.verify_runner_state = true;
  return config;
}

TEST(RunnerStateEngineTest, PreemptionWithSharedPrefixesAndSampling) {
  const std::string dir = FixtureDir("tiny-llama-gqa");
  TestEngine big = MakeCpuEngine(dir, Checked({}));
  ASSERT_NE(big.engine, nullptr);
  const int vocab = big.engine->info().vocab_size;
  std::mt19937 rng(11);
  std::vector<int32_t> prefix(40);
  for (int32_t& t : prefix) t = static_cast<int32_t>(rng() % vocab);
  std::vector<Request> requests;
  for (int i = 0; i < 6; ++i) {
    std::vector<int32_t> prompt = prefix;
    for (int j = 0; j < 5 + 7 * i; ++j) prompt.push_back(static_cast<int32_t>(rng() % vocab));
    Request r = GreedyRequest(prompt, 30);
    if (i % 2 == 1) {  // seeded sampling with penalties: the generator and counts must survive preemption
      r.sampling.temperature = 0.9f;
      r.sampling.seed = 50 + i;
      r.sampling.repetition_penalty = 1.3f;
      r.sampling.frequency_penalty = 0.5f;
    }
    requests.push_back(r);
  }
  std::vector<std::vector<int32_t>> expected;
  for (const Request& r : requests) expected.push_back(RunToCompletion(*big.engine, r)->tokens);

  EngineConfig small;
  small.num_kv_blocks = 14;
  small.max_num_seqs = 8;
  small.max_num_batched_tokens = 48;
  TestEngine t = MakeCpuEngine(dir, Checked(small));
  ASSERT_NE(t.engine, nullptr);
  std::vector<std::shared_ptr<CollectingSink>> sinks;
  for (const Request& r : requests) {
    sinks.push_back(std::make_shared<CollectingSink>());
    ASSERT_TRUE(t.engine->Submit(r, sinks.back()).ok());
  }
  for (size_t i = 0; i < sinks.size(); ++i) {
    ASSERT_TRUE(sinks[i]->WaitDone());
    ASSERT_TRUE(sinks[i]->status.ok()) << sinks[i]->status;
    EXPECT_THAT(sinks[i]->tokens, ::testing::ElementsAreArray(expected[i])) << "request " << i;
  }
  EXPECT_GT(MetricValue(*t.registry, "kvserve_preemptions_total"), 0);
  EXPECT_GT(MetricValue(*t.registry, "kvserve_prefix_cache_hits_total"), 0);
  EXPECT_EQ(t.engine->num_used_blocks(), 0);
}

TEST(RunnerStateEngineTest, CancellationAndStopStrings) {
  TestEngine t = MakeCpuEngine("", Checked({}));  // the built-in model has a tokenizer
  ASSERT_NE(t.engine, nullptr);
  const std::vector<int32_t> prompt = {10, 20, 30, 40, 50};
  auto full = RunToCompletion(*t.engine, GreedyRequest(prompt, 24));
  ASSERT_TRUE(full->status.ok()) << full->status;
  ASSERT_GE(full->text.size(), 8u);
  // A stop string from the greedy text, past its first character: one ASCII
  // byte, so it is valid UTF-8 whatever the byte tokenizer produced around it.
  const std::string& text = full->text;
  size_t at = 1;
  while (at < text.size() && static_cast<unsigned char>(text[at]) >= 0x80) ++at;
  ASSERT_LT(at, text.size()) << "no ASCII byte in: " << text;
  Request stopped = GreedyRequest(prompt, 24);
  stopped.stopping.stop = {text.substr(at, 1)};

  auto cancelled = std::make_shared<CollectingSink>();
  auto stopping = std::make_shared<CollectingSink>();
  auto bystander = std::make_shared<CollectingSink>();
  ASSERT_TRUE(t.engine->Submit(GreedyRequest({1, 2, 3}, 1000), cancelled).ok());
  ASSERT_TRUE(t.engine->Submit(stopped, stopping).ok());
  ASSERT_TRUE(t.engine->Submit(GreedyRequest({7, 8, 9, 10}, 40), bystander).ok());
  // Cancel once it is running (the runner holds it), so that its removal
  // reaches the runner as a finished id.
  const absl::Time deadline = absl::Now() + absl::Seconds(120);
  while (cancelled->num_outputs() == 0 && !cancelled->done() && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  ASSERT_GT(cancelled->num_outputs(), 0) << "the long request never produced a token";
  cancelled->Cancel();
  ASSERT_TRUE(cancelled->WaitDone());
  ASSERT_TRUE(stopping->WaitDone());
  ASSERT_TRUE(bystander->WaitDone());
  EXPECT_TRUE(absl::IsCancelled(cancelled->status)) << cancelled->status;
  ASSERT_TRUE(stopping->status.ok()) << stopping->status;
  EXPECT_EQ(stopping->finish_reason, FinishReason::kStop);
  ASSERT_TRUE(bystander->status.ok()) << bystander->status;
  // Steps after the removals still check out (the removed ones reach the runner as finished).
  ASSERT_TRUE(RunToCompletion(*t.engine, GreedyRequest(prompt, 4))->status.ok());
  EXPECT_EQ(t.engine->num_used_blocks(), 0);
}

}  // namespace
}  // namespace kvserve::testing
