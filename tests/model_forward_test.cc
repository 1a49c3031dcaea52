// The forward pass alone (no scheduler): one prefill of a whole fixture prompt
// computing logits at every position, against transformers' per-position
// logit sums. This checks the causal mask at every position, not only the last.
#include <numeric>

#include "engine/checkpoint.h"
#include "engine/kv_cache.h"
#include "engine/llama_model.h"
#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"
#include "tests/golden_util.h"
#include "tests/test_paths.h"

namespace kvserve::testing {
namespace {

class ModelForwardTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ModelForwardTest, LogitSumsAtEveryPromptPositionMatchTransformers) {
  const std::string dir = FixtureDir(GetParam());
  auto checkpoint = Checkpoint::Open(dir);
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status();
  const ModelConfig config = (*checkpoint)->config();
  CpuBackend backend;
  constexpr int kMaxTokens = 256, kBlockSize = 16;
  auto model = LlamaModel::Create(config, **checkpoint, backend, kMaxTokens, kMaxTokens);
  ASSERT_TRUE(model.ok()) << model.status();
  auto cache = KvCache::Create(backend, config, kMaxTokens / kBlockSize, kBlockSize);
  ASSERT_TRUE(cache.ok()) << cache.status();

  for (const GoldenCase& c : LoadGolden(dir + "/golden.json")) {
    SCOPED_TRACE("prompt of " + std::to_string(c.prompt.size()) + " tokens");
    const int n = static_cast<int>(c.prompt.size());
    // Blocks in reverse order, so the table is not the identity.
    const int blocks = (n + kBlockSize - 1) / kBlockSize;
    std::vector<int32_t> table(blocks), positions(n), slots(n), rows(n);
    for (int b = 0; b < blocks; ++b) table[b] = (*cache)->num_blocks() - 1 - b;
    for (int i = 0; i < n; ++i) {
      positions[i] = i;
      slots[i] = table[i / kBlockSize] * kBlockSize + i % kBlockSize;
      rows[i] = i;
    }
    std::vector<int32_t> ids = c.prompt, cu = {0, n}, ctx = {n};
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
    auto logits = (*model)->Forward(b, **cache);
    ASSERT_TRUE(logits.ok()) << logits.status();
    const int vocab = config.vocab_size;
    for (int i = 0; i < n; ++i) {
      const float* row = logits->as<float>() + int64_t(i) * vocab;
      const double sum = std::accumulate(row, row + vocab, 0.0);
      // Sums of V logits: allow 1e-3 per logit of accumulated difference.
      ASSERT_NEAR(sum, c.logits_sum_per_pos[i], 1e-3 * std::sqrt(double(vocab)) + 1e-4 * std::fabs(sum))
          << "position " << i;
    }
    const float* last = logits->as<float>() + int64_t(n - 1) * vocab;
    EXPECT_LT(MaxAbsDiff(std::vector<float>(last, last + vocab), c.last_logits), 1e-3);
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ModelForwardTest,
                         ::testing::Values("tiny-llama-gqa", "tiny-llama-mha-d128"));

}  // namespace
}  // namespace kvserve::testing
