// The graph-safe execution plan on the CPU backend:
//   - decode batch buckets: sizes, smallest-bucket lookup and fixed offsets;
//   - after start-up, no step allocates a backend buffer (CountingBackend
//     around the real CPU backend), through prefill, mixed and decode steps
//     of every batch size from 1 to 12 (buckets 1, 2, 4, 8, 12), sampled
//     with penalties, and every KV block returns to the pool;
//   - padded decode rows neither write K/V nor change any row's result:
//     each sequence's tokens equal its tokens run alone.
#include "engine/core/decode_buckets.h"

#include <map>

#include "base/ceil_div.h"
#include "engine/core/model_runner.h"
#include "engine/core/scheduler.h"
#include "engine/loading/model_loader.h"
#include "engine/model/model_registry.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"
#include "tests/counting_backend.h"
#include "tests/test_paths.h"

namespace kvserve::testing {
namespace {

using ::testing::ElementsAre;

TEST(DecodeBucketsTest, PowersOfTwoToEightThenMultiplesOfEightUpToMaxSeqs) {
  DecodeBuckets b(/*max_seqs=*/20, /*max_blocks_per_seq=*/5);
  std::vector<int> sizes;
  for (const DecodeBucketLayout& l : b.all()) sizes.push_back(l.size);
  EXPECT_THAT(sizes, ElementsAre(1, 2, 4, 8, 16, 20));
  EXPECT_EQ(b.For(1).size, 1);
  EXPECT_EQ(b.For(3).size, 4);
  EXPECT_EQ(b.For(8).size, 8);
  EXPECT_EQ(b.For(9).size, 16);
  EXPECT_EQ(b.For(17).size, 20);
  const DecodeBucketLayout& l = b.For(16);
  EXPECT_EQ(l.width, 5);
  EXPECT_THAT(std::vector<size_t>({l.token_ids, l.positions, l.slot_mapping, l.context_lens,
                                   l.sample_rows, l.block_tables, l.words}),
              ElementsAre(0, 16, 32, 48, 64, 80, 80 + 16 * 5));
  EXPECT_EQ(b.max_words(), 5 * 20 + 20 * 5u);
}

// A scheduler and runner over CountingBackend(CpuBackend) on a fixture model.
class StepPlanTest : public ::testing::Test {
 protected:
  static constexpr int kBlockSize = 16, kMaxSeqs = 12, kMaxTokens = 64;

  void SetUp() override {
    auto source = OpenModelSource(FixtureDir("tiny-llama-gqa"));
    ASSERT_TRUE(source.ok()) << source.status();
    backend_ = std::make_unique<CountingBackend>(std::make_unique<CpuBackend>());
    auto model = CreateModel(source->config, *source->weights, *backend_, kMaxTokens, kMaxSeqs);
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = *std::move(model);
    auto cache = KvCache::Create(*backend_, source->config.kv_cache_shape(), kNumBlocks, kBlockSize);
    ASSERT_TRUE(cache.ok()) << cache.status();
    cache_ = *std::move(cache);
    blocks_ = std::make_unique<BlockManager>(kNumBlocks, kBlockSize);
    SchedulerConfig sc;
    sc.max_num_seqs = kMaxSeqs;
    sc.max_num_batched_tokens = kMaxTokens;
    scheduler_ = std::make_unique<Scheduler>(sc, *blocks_);
    auto runner = ModelRunner::Create(*backend_, *model_, *cache_, kMaxTokens, kMaxSeqs);
    ASSERT_TRUE(runner.ok()) << runner.status();
    runner_ = *std::move(runner);
    vocab_ = source->config.vocab_size;
  }

  static constexpr int kNumBlocks = 64;
  std::unique_ptr<CountingBackend> backend_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<KvCache> cache_;
  std::unique_ptr<BlockManager> blocks_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<ModelRunner> runner_;
  int vocab_ = 0;
};

// Sequence `key`'s prompt (3 + 5·key tokens) and sampling, under id `id`.
std::unique_ptr<Sequence> MakeSequence(SeqId id, int key, int vocab) {
  const int prompt_len = 3 + 5 * key;
  std::vector<int32_t> prompt(prompt_len);
  for (int i = 0; i < prompt_len; ++i) prompt[i] = static_cast<int32_t>((key * 37 + i * 11) % vocab);
  auto seq = std::make_unique<Sequence>(id, std::move(prompt));
  if (key % 2 == 0) {  // penalties: the sampler's token lists go up too
    seq->sampling.options.repetition_penalty = 1.2f;
    seq->sampling.options.presence_penalty = 0.3f;
  }
  return seq;
}

// Runs every sequence until it has `new_tokens[id]` generated tokens; the
// generated tokens by sequence.
std::map<SeqId, std::vector<int32_t>> RunAll(Scheduler& scheduler, ModelRunner& runner,
                                             const std::map<SeqId, int>& new_tokens,
                                             std::vector<int>* padded_batches) {
  std::map<SeqId, std::vector<int32_t>> out;
  for (int guard = 0; scheduler.HasWork(); ++guard) {
    if (guard > 1000) {
      ADD_FAILURE() << "no progress";
      break;
    }
    const ScheduleOutput schedule = scheduler.Schedule();
    absl::StatusOr<StepResult> result = runner.Run(schedule);
    if (!result.ok()) {
      ADD_FAILURE() << result.status();
      break;
    }
    if (padded_batches != nullptr && result->padded_batch > 0) {
      padded_batches->push_back(result->padded_batch);
    }
    for (size_t i = 0; i < result->seq_ids.size(); ++i) {
      const SeqId id = result->seq_ids[i];
      scheduler.AppendToken(id, result->tokens[i]);
      out[id].push_back(result->tokens[i]);
      if (static_cast<int>(out[id].size()) == new_tokens.at(id)) scheduler.Remove(id);
    }
  }
  return out;
}

TEST_F(StepPlanTest, NoStepAllocatesAndPaddedRowsChangeNothing) {
  const int allocations_at_start = backend_->num_allocations();
  std::map<SeqId, int> new_tokens;
  for (SeqId id = 1; id <= kMaxSeqs; ++id) {
    scheduler_->Add(MakeSequence(id, static_cast<int>(id), vocab_));
    new_tokens[id] = 2 + 3 * static_cast<int>(id);  // they finish one by one: every batch size
  }
  std::vector<int> padded;
  const auto together = RunAll(*scheduler_, *runner_, new_tokens, &padded);
  EXPECT_EQ(backend_->num_allocations(), allocations_at_start) << "a step allocated a buffer";
  EXPECT_EQ(blocks_->num_used_blocks(), 0);
  // Padded decode steps ran: 11 → 12, 7 → 8, 5 → 8, 3 → 4.
  for (int bucket : {12, 8, 4, 2, 1}) EXPECT_THAT(padded, ::testing::Contains(bucket));

  // Alone (batch 1, no padding): the same tokens, so no padded row wrote
  // into anyone's K/V or changed another row.
  for (SeqId key = 1; key <= kMaxSeqs; ++key) {
    const SeqId id = 100 + key;
    scheduler_->Add(MakeSequence(id, static_cast<int>(key), vocab_));
    const auto alone = RunAll(*scheduler_, *runner_, {{id, new_tokens[key]}}, nullptr);
    EXPECT_EQ(alone.at(id), together.at(key)) << "sequence " << key;
  }
  EXPECT_EQ(backend_->num_allocations(), allocations_at_start);
  EXPECT_EQ(blocks_->num_used_blocks(), 0);
}

}  // namespace
}  // namespace kvserve::testing
