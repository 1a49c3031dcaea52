#include "tests/golden_util.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace kvserve::testing {

std::vector<GoldenCase> LoadGolden(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  nlohmann::json j = nlohmann::json::parse(in);
  std::vector<GoldenCase> cases;
  for (const auto& c : j["cases"]) {
    GoldenCase g;
    g.prompt = c["prompt"].get<std::vector<int32_t>>();
    g.greedy = c["greedy"].get<std::vector<int32_t>>();
    g.margins = c["greedy_margins"].get<std::vector<float>>();
    g.last_logits = c["last_logits"].get<std::vector<float>>();
    g.logits_sum_per_pos = c["logits_sum_per_pos"].get<std::vector<float>>();
    cases.push_back(std::move(g));
  }
  return cases;
}

bool GenerateMaskedPrompt(const GoldenCase& c) {
  return std::find(c.prompt.begin(), c.prompt.end(), 0) != c.prompt.end();
}

int ArgMax(const std::vector<float>& v) {
  return static_cast<int>(std::max_element(v.begin(), v.end()) - v.begin());
}

size_t ComparableSteps(const GoldenCase& c, float min_margin) {
  if (GenerateMaskedPrompt(c)) return 0;
  size_t i = 0;
  while (i < c.greedy.size() && c.margins[i] >= min_margin) ++i;
  // Step i itself has a near-tie: its token may differ, and everything after.
  return i;
}

float MaxAbsDiff(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return std::numeric_limits<float>::infinity();
  float worst = 0.f;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(a[i] - b[i]));
  return worst;
}

}  // namespace kvserve::testing
