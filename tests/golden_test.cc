// The CPU engine against Hugging Face transformers: for every fixture prompt,
// the greedy tokens equal golden.json up to the first step whose top-2 logit
// margin is under 0.02 (where a correct engine may pick either token), and
// the logits at the prompt's last position match within 1e-3. (Prompts that
// contain token id 0 are the exception: see ComparableSteps.)
#include <fstream>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/engine_test_util.h"
#include "tests/golden_util.h"
#include "tests/test_paths.h"

namespace kvserve::testing {
namespace {

class GoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenTest, GreedyTokensAndLastLogitsMatchTransformers) {
  const std::string dir = FixtureDir(GetParam());
  const std::vector<GoldenCase> cases = LoadGolden(dir + "/golden.json");
  ASSERT_EQ(cases.size(), 5u);
  TestEngine t = MakeCpuEngine(dir);
  ASSERT_NE(t.engine, nullptr);
  for (const GoldenCase& c : cases) {
    SCOPED_TRACE("prompt of " + std::to_string(c.prompt.size()) + " tokens");
    auto sink = RunToCompletion(*t.engine, GreedyRequest(c.prompt, 24, /*capture_logits=*/true));
    ASSERT_TRUE(sink->status.ok()) << sink->status;
    ASSERT_EQ(sink->tokens.size(), 24u);
    EXPECT_EQ(sink->finish_reason, FinishReason::kLength);
    const size_t compared = ComparableSteps(c);
    for (size_t i = 0; i < compared; ++i) {
      ASSERT_EQ(sink->tokens[i], c.greedy[i]) << "step " << i << " (margin " << c.margins[i] << ")";
    }
    ASSERT_FALSE(sink->logits.empty());
    EXPECT_LT(MaxAbsDiff(sink->logits[0], c.last_logits), 1e-3);
    // Always: the first token is the argmax of transformers' own last logits.
    EXPECT_EQ(sink->tokens[0], ArgMax(c.last_logits));
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, GoldenTest,
                         ::testing::Values("tiny-llama-gqa", "tiny-llama-mha-d128", "tiny-llama3",
                                           "tiny-qwen2", "tiny-mistral"));

}  // namespace
}  // namespace kvserve::testing
