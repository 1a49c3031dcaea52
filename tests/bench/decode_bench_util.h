// Shared by the decode benchmarks: requests through the engine (the serving
// path: scheduler, metadata, sampling), timed per token.
#pragma once

#include <condition_variable>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "engine/core/engine.h"

namespace kvserve::bench {

/// Parses "1,8,32" (--batches); InvalidArgument on anything but positive ints.
absl::StatusOr<std::vector<int>> ParseBatches(const std::string& list);

/// Parameters a decode step reads once (a tied embedding once, as the LM head).
int64_t WeightParams(const ModelConfig& c);

struct DecodeResult {
  int batch = 0;
  double decode_tokens_per_s = 0;  // tokens after each request's first, per second
  double ms_per_step = 0;
  double ttft_ms = 0;              // submit → the last request's first token
};

/// Submits `batch` random prompts of `prompt_len` tokens at once (greedy, EOS
/// ignored, `new_tokens` each) and measures the decode phase: from the last
/// first token to the last token.
absl::StatusOr<DecodeResult> MeasureDecode(Engine& engine, int batch, int prompt_len,
                                           int new_tokens, std::mt19937& rng);

}  // namespace kvserve::bench
