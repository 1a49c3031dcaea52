// Per-row logit work around the CPU sampler: the adjustments applied before
// the sampling rule and the raw log-probabilities taken before them (see
// LogitAdjustments and LogprobOutputs in kernels/op_params.h).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "kernels/op_params.h"

namespace kvserve::cpu {

/// Applies row r's penalties and bans to `row` [V] in place. Appends the raw
/// value of every entry it changes to `raw` (id, value before), so that the
/// raw log-probability of the sampled token can still be read afterwards.
void AdjustRow(const LogitAdjustments& a, int r, float* row, int vocab,
               std::vector<std::pair<int32_t, float>>& raw);

/// log(Σ exp(row[i])), with the max subtracted first; summed in double.
double LogSumExp(const float* row, int vocab);

/// The n largest logits of `row` (ties: lower id first) as ids and
/// log-probabilities `row[id] - lse`, written to ids[0, n) and logprobs[0, n).
void TopLogprobs(const float* row, int vocab, double lse, int n, int32_t* ids, float* logprobs,
                 std::vector<int32_t>& scratch);

}  // namespace kvserve::cpu
