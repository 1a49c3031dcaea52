// Checks a request against the served model's limits before it is queued.
// Every error is INVALID_ARGUMENT naming the field (as the public API spells
// it) and the limit.
#pragma once

#include "absl/status/status.h"
#include "engine/core/model_info.h"
#include "engine/core/request.h"

namespace kvserve {

inline constexpr int kMaxStopStrings = 16;
inline constexpr int kMaxStopStringBytes = 256;
inline constexpr int kMaxStopTokenIds = 64;
inline constexpr uint32_t kMaxTopLogprobs = 20;
inline constexpr float kMaxAbsPresenceFrequencyPenalty = 2.f;

absl::Status ValidateRequest(const Request& request, const ModelInfo& model);

/// max_new_tokens once defaults apply: the request's, or the default capped
/// by the context left after the prompt.
uint32_t EffectiveMaxNewTokens(const Request& request, const ModelInfo& model);

}  // namespace kvserve
