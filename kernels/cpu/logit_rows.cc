#include "kernels/cpu/logit_rows.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>

namespace kvserve::cpu {

void AdjustRow(const LogitAdjustments& a, int r, float* row, int vocab,
               std::vector<std::pair<int32_t, float>>& raw) {
  const int32_t* seen_offsets = a.seen_offsets.as<int32_t>();
  const int32_t* tokens = a.seen_tokens.as<int32_t>();
  const int32_t* counts = a.seen_counts.as<int32_t>();
  const float rep = a.repetition_penalty.as<float>()[r];
  const float presence = a.presence_penalty.as<float>()[r];
  const float frequency = a.frequency_penalty.as<float>()[r];
  for (int32_t e = seen_offsets[r]; e < seen_offsets[r + 1]; ++e) {
    const int32_t id = tokens[e];
    if (id < 0 || id >= vocab) continue;  // the host builds these from validated ids
    float x = row[id];
    raw.emplace_back(id, x);
    if (rep != 1.f) x = x > 0.f ? x / rep : x * rep;
    const int32_t c = counts[e];
    if (c > 0) x -= frequency * static_cast<float>(c) + presence;
    row[id] = x;
  }
  const int32_t* banned_offsets = a.banned_offsets.as<int32_t>();
  const int32_t* banned = a.banned_tokens.as<int32_t>();
  for (int32_t e = banned_offsets[r]; e < banned_offsets[r + 1]; ++e) {
    const int32_t id = banned[e];
    if (id < 0 || id >= vocab) continue;
    raw.emplace_back(id, row[id]);
    row[id] = -std::numeric_limits<float>::infinity();
  }
}

double LogSumExp(const float* row, int vocab) {
  const float max = *std::max_element(row, row + vocab);
  double sum = 0.0;
  // float exp (x - max <= 0, so no overflow), summed in double.
  for (int i = 0; i < vocab; ++i) sum += std::exp(row[i] - max);
  return max + std::log(sum);
}

void TopLogprobs(const float* row, int vocab, double lse, int n, int32_t* ids, float* logprobs,
                 std::vector<int32_t>& scratch) {
  n = std::min(n, vocab);
  if (n <= 0) return;
  // One pass in id order, keeping the n best in order: a later id enters only
  // with a strictly larger logit, so ties keep the lower id first. n <= 20,
  // and after the first few thousand ids an insertion is rare.
  scratch.clear();
  for (int i = 0; i < vocab; ++i) {
    if (static_cast<int>(scratch.size()) == n && !(row[i] > row[scratch.back()])) continue;
    const auto at = std::upper_bound(scratch.begin(), scratch.end(), i,
                                     [&](int32_t id, int32_t other) { return row[id] > row[other]; });
    const ptrdiff_t pos = at - scratch.begin();
    if (static_cast<int>(scratch.size()) == n) scratch.pop_back();
    scratch.insert(scratch.begin() + pos, i);
  }
  for (int i = 0; i < n; ++i) {
    ids[i] = scratch[i];
    logprobs[i] = static_cast<float>(row[scratch[i]] - lse);
  }
}

}  // namespace kvserve::cpu
