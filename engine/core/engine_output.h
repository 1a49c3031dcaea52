// What the engine thread hands the output stage: per iteration, the events of
// each request (in the order they happened) and the iteration's stats. The
// engine emits exactly one terminal event per admitted request: a token with
// a finish reason, an abort, or the acknowledgement of a requested stop.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "engine/core/iteration_stats.h"
#include "engine/core/request.h"
#include "engine/core/sequence.h"

namespace kvserve {

/// A request entered the engine; the output stage takes over its sink.
struct RequestAdded {
  SeqId id = 0;
  std::shared_ptr<RequestSink> sink;
  std::vector<std::string> stop;  // stop strings, matched on the output thread
  uint32_t prompt_tokens = 0;
  bool capture_logits = false;
  absl::Time arrival;
};

/// A sampled token. `finish` is the engine's verdict from the token alone
/// (EOS, a stop token id, max_new_tokens); a stop string may still end the
/// request earlier on the output thread.
struct TokenSampled {
  SeqId id = 0;
  int32_t token = 0;
  FinishReason finish = FinishReason::kNone;
  std::vector<float> logits;  // when captured
  std::optional<TokenLogprobs> logprobs;  // when the request asked for them
};

/// The request ended early (cancel, deadline, shutdown, model error).
struct RequestAborted {
  SeqId id = 0;
  absl::Status status;
};

/// The engine applied Engine::RequestStop: the sequence and its blocks are gone.
struct StopApplied {
  SeqId id = 0;
};

using EngineEvent = std::variant<RequestAdded, TokenSampled, RequestAborted, StopApplied>;

struct EngineIterationOutput {
  std::vector<EngineEvent> events;
  IterationStats stats;
};

}  // namespace kvserve
