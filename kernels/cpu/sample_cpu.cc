// Token selection on the CPU; see SampleParams for the exact rule, which the
// CUDA sampler follows too so that one uniform draw picks the same token.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/logit_rows.h"

namespace kvserve::cpu {
namespace {

int32_t ArgMax(const float* logits, int vocab) {
  int32_t best = 0;
  for (int i = 1; i < vocab; ++i) {
    if (logits[i] > logits[best]) best = i;  // strict: the lowest id wins ties
  }
  return best;
}

int32_t SampleRow(const float* logits, int vocab, float temperature, int top_k, float top_p,
                  float min_p, float uniform, std::vector<int32_t>& order,
                  std::vector<float>& probs) {
  if (temperature <= 0.f) return ArgMax(logits, vocab);
  const bool use_top_k = top_k > 0 && top_k < vocab;
  const bool use_top_p = top_p < 1.f;
  order.resize(vocab);
  std::iota(order.begin(), order.end(), 0);
  int candidates = vocab;
  auto by_logit = [&](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  };
  if (use_top_k) {
    candidates = top_k;
    std::partial_sort(order.begin(), order.begin() + candidates, order.end(), by_logit);
  } else if (use_top_p) {
    std::sort(order.begin(), order.end(), by_logit);
  }
  // Softmax over the candidates at this temperature.
  float max_logit = logits[order[0]];
  if (!use_top_k && !use_top_p) max_logit = logits[ArgMax(logits, vocab)];
  probs.resize(candidates);
  double total = 0.0;
  for (int i = 0; i < candidates; ++i) {
    probs[i] = std::exp((logits[order[i]] - max_logit) / temperature);
    total += probs[i];
  }
  if (use_top_p) {
    // Shortest prefix (in descending order) whose mass reaches top_p.
    double mass = 0.0;
    int keep = 0;
    while (keep < candidates) {
      mass += probs[keep++];
      if (mass >= top_p * total) break;
    }
    candidates = keep;
    total = mass;
  }
  int last = candidates - 1;
  if (min_p > 0.f) {
    // probs are relative to the most likely token's (which is 1): a zero
    // weight drops a candidate without changing the walk's order.
    total = 0.0;
    for (int i = 0; i < candidates; ++i) {
      if (probs[i] < min_p) {
        probs[i] = 0.f;
      } else {
        total += probs[i];
        last = i;
      }
    }
  }
  const double target = static_cast<double>(uniform) * total;
  double cumulative = 0.0;
  for (int i = 0; i < candidates; ++i) {
    cumulative += probs[i];
    if (cumulative > target) return order[i];
  }
  return order[last];  // uniform * total rounded up to the total
}

// The sampled token's raw logit: from `raw` when the adjustments changed it.
float RawLogit(const float* row, int32_t token, const std::vector<std::pair<int32_t, float>>& raw) {
  for (const auto& [id, value] : raw) {
    if (id == token) return value;  // the first entry is the value before any change
  }
  return row[token];
}

}  // namespace

void Sample(const SampleParams& p) {
  const int vocab = static_cast<int>(p.logits.dim(1));
  std::vector<int32_t> order;
  std::vector<float> probs;
  std::vector<std::pair<int32_t, float>> raw;
  const LogprobOutputs& lp = p.logprobs;
  const int64_t k_max = lp.active() ? lp.top_ids.dim(1) : 0;
  for (int r = 0; r < p.num_rows; ++r) {
    float* row = p.logits.as<float>() + int64_t(r) * vocab;
    const int top_n = lp.active() ? lp.top_n.as<int32_t>()[r] : -1;
    double lse = 0.0;
    if (top_n >= 0) {  // of the raw logits, before the adjustments
      lse = LogSumExp(row, vocab);
      TopLogprobs(row, vocab, lse, std::min<int64_t>(top_n, k_max), lp.top_ids.as<int32_t>() + r * k_max,
                  lp.top_logprobs.as<float>() + r * k_max, order);
    }
    raw.clear();
    if (p.adjust.active()) AdjustRow(p.adjust, r, row, vocab, raw);
    const float min_p = p.min_p.empty() ? 0.f : p.min_p.as<float>()[r];
    const int32_t token =
        SampleRow(row, vocab, p.temperature.as<float>()[r], p.top_k.as<int32_t>()[r],
                  p.top_p.as<float>()[r], min_p, p.uniform.as<float>()[r], order, probs);
    p.out_tokens.as<int32_t>()[r] = token;
    if (top_n >= 0) {
      lp.token_logprob.as<float>()[r] = static_cast<float>(RawLogit(row, token, raw) - lse);
    }
  }
}

}  // namespace kvserve::cpu

namespace kvserve::cpu {

void MaskLogits(const MaskLogitsParams& p) {
  const int64_t vocab = p.logits.dim(1);
  const int64_t words = p.masks.dim(1);
  for (int64_t m = 0; m < p.rows.dim(0); ++m) {
    float* row = p.logits.as<float>() + int64_t(p.rows.as<int32_t>()[m]) * vocab;
    const uint32_t* mask = reinterpret_cast<const uint32_t*>(p.masks.as<int32_t>()) + m * words;
    for (int64_t v = 0; v < vocab; ++v) {
      if (((mask[v >> 5] >> (v & 31)) & 1u) == 0) row[v] = -INFINITY;
    }
  }
}

}  // namespace kvserve::cpu
