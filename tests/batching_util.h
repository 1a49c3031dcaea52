// The "padding masks are exact" check, shared by every backend's tests.
#pragma once

#include <string>
#include <vector>

#include "engine/core/engine.h"

namespace kvserve::testing {

/// A fixture's golden prompts plus `num_random` random ones (1..90 tokens).
std::vector<std::vector<int32_t>> FixtureAndRandomPrompts(const std::string& fixture,
                                                          int num_random, int vocab,
                                                          uint32_t seed);

/// Runs each prompt alone (greedy, logits captured), then `rounds` times all
/// of them together in a shuffled order, each preceded by a sampled request
/// of another length; every prompt must give the same tokens, and logits
/// within `max_abs_error` at every step, as it gave alone.
void ExpectBatchedEqualsAlone(Engine& engine, const std::vector<std::vector<int32_t>>& prompts,
                              uint32_t new_tokens, int rounds, float max_abs_error,
                              uint32_t seed);

/// The same check with the prompts run alone on `reference` and batched on
/// `engine` (e.g. prefix caching off and on).
void ExpectBatchedEqualsReference(Engine& reference, Engine& engine,
                                  const std::vector<std::vector<int32_t>>& prompts,
                                  uint32_t new_tokens, int rounds, float max_abs_error,
                                  uint32_t seed);

}  // namespace kvserve::testing
