// Parses the JSON body of POST /v1/completions and /v1/chat/completions into
// the gRPC API's request messages, so that both APIs share one mapping and
// one validation (server/request_mapping, server/chat_mapping, the engine).
// This parser checks only what JSON adds: types, and the fields that exist
// only here (n, stream, logprobs flags, echo). OpenAI parameters kvserve does
// not implement and that would change the output (suffix, best_of other than
// n, logit_bias, functions, audio, ...) are refused as unsupported_parameter;
// the others (user, metadata, store, ...) and unknown fields are listed, not
// refused.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/model/sampling_defaults.h"
#include "kvserve/v1/inference.pb.h"

namespace kvserve::http {

enum class Endpoint { kCompletions, kChat };

inline constexpr int kMaxChoices = 64;  // n

struct OpenAiRequest {
  Endpoint endpoint = Endpoint::kCompletions;
  std::string model;  // empty: not given (the served model)
  /// Completions: the prompt and the options. Chat: only the options (the
  /// prompt comes from rendering `chat`).
  v1::GenerateRequest generate;
  v1::ChatRequest chat;  // chat: the messages
  int n = 1;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  bool logprobs = false;       // return log-probabilities (generate.sampling.logprobs = top N)
  bool echo = false;           // completions: the prompt's text comes before each choice's
  std::string max_tokens_name = "max_tokens";  // or max_completion_tokens, for error messages
  std::vector<std::string> unknown_fields;
  /// The field that set a structured-output constraint, if any: the
  /// compiler's errors name "sampling.json_schema" etc., shown as this.
  std::string constraint_field;
};

/// INVALID_ARGUMENT messages start with the parameter's name
/// ("temperature must be a number, got string").
absl::StatusOr<OpenAiRequest> ParseOpenAiRequest(Endpoint endpoint, std::string_view body);

/// The HTTP API's values for the sampling fields a request left out: the
/// model's recommendation (generation_config.json, GGUF metadata) where it
/// has one, else OpenAI's and vLLM's temperature 1 (gRPC's default is greedy).
void ApplyHttpSamplingDefaults(const SamplingDefaults& model, v1::SamplingParams& sampling);

}  // namespace kvserve::http
