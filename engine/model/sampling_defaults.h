// The sampling values a model's authors recommend, from its
// generation_config.json (Hugging Face) or its GGUF metadata
// (`general.sampling.*`, llama.cpp's keys). The OpenAI-compatible HTTP API
// uses them for the fields a request leaves out, as vLLM does; gRPC keeps its
// documented defaults (greedy). Values outside what a request may give are
// ignored with a warning, so a default can never make a request fail.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "nlohmann/json_fwd.hpp"

namespace kvserve {

struct SamplingDefaults {
  std::optional<float> temperature;         // >= 0 (0: greedy)
  std::optional<float> top_p;               // (0, 1]
  std::optional<int32_t> top_k;             // >= 0 (0: off; negative values in a file mean off too)
  std::optional<float> min_p;               // [0, 1]
  std::optional<float> repetition_penalty;  // > 0
  std::string source;  // where they came from, for logs: "generation_config.json", "GGUF metadata"

  bool empty() const { return !temperature && !top_p && !top_k && !min_p && !repetition_penalty; }
  /// "temperature 0.7, top_p 0.8, top_k 20" (empty when none).
  std::string ToString() const;
  /// Sets the field `name` (temperature, top_p, top_k, min_p,
  /// repetition_penalty) when `value` is in its range; otherwise logs a
  /// warning naming `key` and `source` and leaves it unset.
  void Set(absl::string_view name, double value, absl::string_view key);
};

/// From a parsed generation_config.json: temperature, top_p, top_k, min_p,
/// repetition_penalty (the fields vLLM takes). With "do_sample": false,
/// Transformers decodes greedily and ignores the sampling fields, so only
/// repetition_penalty (applied in greedy decoding too) is taken.
SamplingDefaults SamplingDefaultsFromGenerationConfig(const nlohmann::json& config);

}  // namespace kvserve
