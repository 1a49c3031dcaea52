// golden.json from the Hugging Face fixtures (see tests/data/FIXTURES.md).
#pragma once

#include <string>
#include <vector>

namespace kvserve::testing {

struct GoldenCase {
  std::vector<int32_t> prompt;
  std::vector<int32_t> greedy;
  std::vector<float> margins;
  std::vector<float> last_logits;
  std::vector<float> logits_sum_per_pos;
};

std::vector<GoldenCase> LoadGolden(const std::string& path);

/// Greedy steps that must match: those before the first margin under 0.02.
/// Zero when the prompt holds token id 0: make_golden.py ran generate() with
/// pad_token_id=0 and no attention mask, so transformers inferred
/// attention_mask = (ids != 0) and masked those prompt tokens as padding; its
/// greedy tokens are then not the plain model's (tiny-llama-mha-d128's
/// 64-token prompt: generate() gives 491 where argmax(last_logits) is 212).
size_t ComparableSteps(const GoldenCase& c, float min_margin = 0.02f);

/// Whether transformers' generate() masked part of this prompt (see above).
bool GenerateMaskedPrompt(const GoldenCase& c);

/// Index of the largest value (the lowest index on ties).
int ArgMax(const std::vector<float>& v);

float MaxAbsDiff(const std::vector<float>& a, const std::vector<float>& b);

}  // namespace kvserve::testing
