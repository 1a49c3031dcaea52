// What the server hands the engine, and what the engine hands back.
// Field names mirror the public API (proto/kvserve/v1/inference.proto) so
// that validation messages name the fields a client set.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "engine/grammar/compiled_constraint.h"

namespace kvserve {

struct SamplingOptions {
  float temperature = 0.f;  // 0 = greedy
  int32_t top_k = 0;        // 0 = off
  float top_p = 1.f;        // 1 = off
  std::optional<uint64_t> seed;
  float repetition_penalty = 1.f;  // 1 = off; over prompt and generated tokens
  float presence_penalty = 0.f;    // over generated tokens
  float frequency_penalty = 0.f;   // over generated tokens
  float min_p = 0.f;               // 0 = off
  uint32_t min_new_tokens = 0;     // EOS and stop token ids masked until reached
  /// Unset: no log-probabilities; N: the sampled token's and the top N's.
  std::optional<uint32_t> logprobs;

  /// Whether any penalty changes the logits (the engine keeps token counts then).
  bool has_penalties() const {
    return repetition_penalty != 1.f || presence_penalty != 0.f || frequency_penalty != 0.f;
  }
};

struct StoppingOptions {
  std::optional<uint32_t> max_new_tokens;  // unset: the engine's default
  std::vector<std::string> stop;
  std::vector<int32_t> stop_token_ids;
  bool ignore_eos = false;
};

struct Request {
  std::string request_id;
  std::vector<int32_t> prompt;  // token ids; the server encodes text input
  SamplingOptions sampling;
  StoppingOptions stopping;
  absl::Time deadline = absl::InfiniteFuture();
  /// For tests and tools: return the logits each sampled token was drawn from.
  bool capture_logits = false;
  /// Structured output (compiled by the server: grammar::ConstraintCompiler):
  /// each token is drawn from those the constraint allows, and the
  /// end-of-sequence and stop token ids only where it may end. Null: none.
  std::shared_ptr<grammar::CompiledConstraint> constraint;
};

enum class FinishReason { kNone, kLength, kEos, kStop };

struct TokenLogprob {
  int32_t token_id = 0;
  float logprob = 0.f;
};

/// One generated token's log-probability under the model's raw distribution
/// (log_softmax of the logits, before penalties and temperature) and the
/// most likely alternatives, ordered by logprob descending (ties: lower id).
struct TokenLogprobs {
  TokenLogprob token;
  std::vector<TokenLogprob> top;
};

/// New tokens of one request since its previous output.
struct RequestOutput {
  std::vector<int32_t> token_ids;
  std::string text;
  FinishReason finish_reason = FinishReason::kNone;  // set on the last output
  uint32_t prompt_tokens = 0;
  uint32_t completion_tokens = 0;  // so far
  std::vector<std::vector<float>> logits;  // one row per token, when captured
  std::vector<TokenLogprobs> logprobs;     // one per token, when sampling.logprobs is set
  bool finished() const { return finish_reason != FinishReason::kNone; }
};

/// Receives one request's results. Called on the engine thread only: it must
/// not block (queue the output and return). Either the last OnOutput carries a
/// finish reason, or OnAbort ends the request; nothing is called after that.
class RequestSink {
 public:
  virtual ~RequestSink() = default;
  virtual void OnOutput(RequestOutput output) = 0;
  /// The request ended early: CANCELLED, DEADLINE_EXCEEDED, UNAVAILABLE
  /// (shutdown) or INTERNAL.
  virtual void OnAbort(absl::Status status) = 0;
  /// Polled by the engine every step; true aborts the request.
  virtual bool IsCancelled() const = 0;
  /// Polled by the engine every step: true while the client has too many
  /// tokens unread (--max_unsent_tokens, engine/core/unsent_tokens.h); the
  /// request is then not scheduled, its KV blocks kept. A sink that resumes
  /// must call Engine::Wake. Must be cheap: an atomic read.
  virtual bool IsPaused() const { return false; }
};

}  // namespace kvserve
