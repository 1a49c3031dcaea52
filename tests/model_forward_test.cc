// The forward pass alone (no scheduler): one prefill of a whole fixture prompt
// computing logits at every position, against transformers' per-position
// logit sums. This checks the causal mask at every position, not only the last.
#include <numeric>
#include <random>

#include "engine/kv/kv_cache.h"
#include "engine/loading/checkpoint.h"
#include "engine/model/llama_model.h"
#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"
#include "tests/golden_util.h"
#include "tests/test_paths.h"

namespace kvserve::testing {
namespace {

// Runs one whole-prompt prefill returning the logits at every position.
class PromptRunner {
 public:
  explicit PromptRunner(const std::string& dir) {
    auto checkpoint = Checkpoint::Open(dir);
    EXPECT_TRUE(checkpoint.ok()) << checkpoint.status();
    config_ = (*checkpoint)->config();
    auto model = LlamaModel::Create(config_, **checkpoint, backend_, kMaxTokens, kMaxTokens);
    EXPECT_TRUE(model.ok()) << model.status();
    model_ = *std::move(model);
    auto cache = KvCache::Create(backend_, config_.kv_cache_shape(), kMaxTokens / kBlockSize, kBlockSize);
    EXPECT_TRUE(cache.ok()) << cache.status();
    cache_ = *std::move(cache);
  }

  // [n, V] logits, row i for prompt position i.
  std::vector<std::vector<float>> AllLogits(const std::vector<int32_t>& prompt) {
    const int n = static_cast<int>(prompt.size());
    // Blocks in reverse order, so the table is not the identity.
    const int blocks = (n + kBlockSize - 1) / kBlockSize;
    std::vector<int32_t> table(blocks), positions(n), slots(n), rows(n);
    for (int b = 0; b < blocks; ++b) table[b] = cache_->num_blocks() - 1 - b;
    for (int i = 0; i < n; ++i) {
      positions[i] = i;
      slots[i] = table[i / kBlockSize] * kBlockSize + i % kBlockSize;
      rows[i] = i;
    }
    std::vector<int32_t> ids = prompt, cu = {0, n}, ctx = {n};
    StepBatch b;
    b.num_tokens = b.num_prefill_tokens = b.num_samples = n;
    b.num_prefill_seqs = 1;
    b.token_ids = Tensor(ids.data(), DType::kInt32, {n});
    b.positions = Tensor(positions.data(), DType::kInt32, {n});
    b.slot_mapping = Tensor(slots.data(), DType::kInt32, {n});
    b.prefill_cu_seqlens = Tensor(cu.data(), DType::kInt32, {2});
    b.prefill_context_lens = Tensor(ctx.data(), DType::kInt32, {1});
    b.prefill_block_tables = Tensor(table.data(), DType::kInt32, {1, blocks});
    b.prefill_max_q_len = b.prefill_max_context = n;
    b.decode_context_lens = Tensor(ctx.data(), DType::kInt32, {0});
    b.decode_block_tables = Tensor(table.data(), DType::kInt32, {0, blocks});
    b.sample_rows = Tensor(rows.data(), DType::kInt32, {n});
    auto logits = model_->Forward(b, *cache_);
    EXPECT_TRUE(logits.ok()) << logits.status();
    std::vector<std::vector<float>> out;
    const int vocab = config_.vocab_size;
    for (int i = 0; i < n; ++i) {
      const float* row = logits->as<float>() + int64_t(i) * vocab;
      out.emplace_back(row, row + vocab);
    }
    return out;
  }

  const ModelConfig& config() const { return config_; }

 private:
  static constexpr int kMaxTokens = 256, kBlockSize = 16;
  CpuBackend backend_;
  ModelConfig config_;
  std::unique_ptr<LlamaModel> model_;
  std::unique_ptr<KvCache> cache_;
};

class ModelForwardTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ModelForwardTest, LogitSumsAtEveryPromptPositionMatchTransformers) {
  const std::string dir = FixtureDir(GetParam());
  PromptRunner runner(dir);
  for (const GoldenCase& c : LoadGolden(dir + "/golden.json")) {
    SCOPED_TRACE("prompt of " + std::to_string(c.prompt.size()) + " tokens");
    const auto logits = runner.AllLogits(c.prompt);
    const double vocab = runner.config().vocab_size;
    for (size_t i = 0; i < c.prompt.size(); ++i) {
      const double sum = std::accumulate(logits[i].begin(), logits[i].end(), 0.0);
      // Sums of V logits: allow 1e-3 per logit, accumulated as a random walk.
      ASSERT_NEAR(sum, c.logits_sum_per_pos[i], 1e-3 * std::sqrt(vocab) + 1e-4 * std::fabs(sum))
          << "position " << i;
    }
    EXPECT_LT(MaxAbsDiff(logits.back(), c.last_logits), 1e-3);
  }
}

TEST_P(ModelForwardTest, LaterTokensNeverChangeEarlierOutputs) {
  // Causality: change every token after position i; outputs at positions <= i
  // stay the same (to float rounding), and later ones change.
  PromptRunner runner(FixtureDir(GetParam()));
  std::mt19937 rng(3);
  const int vocab = runner.config().vocab_size;
  std::vector<int32_t> prompt(100);
  for (int32_t& t : prompt) t = rng() % vocab;
  const auto base = runner.AllLogits(prompt);
  for (int i : {0, 1, 15, 16, 50, 98}) {
    SCOPED_TRACE("changed after position " + std::to_string(i));
    std::vector<int32_t> changed = prompt;
    for (size_t j = i + 1; j < changed.size(); ++j) changed[j] = (changed[j] + 1 + rng() % (vocab - 1)) % vocab;
    const auto logits = runner.AllLogits(changed);
    for (int p = 0; p <= i; ++p) ASSERT_LT(MaxAbsDiff(logits[p], base[p]), 1e-6) << "position " << p;
    EXPECT_GT(MaxAbsDiff(logits[i + 1], base[i + 1]), 1e-3);
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ModelForwardTest,
                         ::testing::Values("tiny-llama-gqa", "tiny-llama-mha-d128", "tiny-llama3",
                                           "tiny-qwen2", "tiny-mistral"));

}  // namespace
}  // namespace kvserve::testing
