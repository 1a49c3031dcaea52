// Public API messages ↔ engine types.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "engine/core/engine.h"
#include "engine/core/request.h"
#include "kvserve/v1/inference.pb.h"

namespace kvserve {

/// Builds the engine request: picks the input (text is encoded with the
/// model's tokenizer, BOS included when the tokenizer adds it), copies the
/// optional fields, and gives the request an id when it has none. Errors are
/// INVALID_ARGUMENT naming the field; the engine checks the numeric limits.
absl::StatusOr<Request> ToEngineRequest(const v1::GenerateRequest& proto, const Engine& engine,
                                        absl::Time deadline);

v1::FinishReason ToProto(FinishReason reason);

/// "length", "eos" or "stop": the outcome label of a request that finished.
std::string FinishReasonLabel(FinishReason reason);

void FillModelInfo(const ModelInfo& info, v1::GetModelInfoResponse& out);

}  // namespace kvserve
