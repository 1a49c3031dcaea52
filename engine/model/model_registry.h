// Architecture registry: `model_type` (config.json, or the GGUF architecture)
// → the Model implementation that serves it. A new architecture is one new
// file with a Create function and one line in model_registry.cc.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/model/model.h"
#include "engine/model/model_config.h"
#include "engine/model/weight_source.h"
#include "kernels/backend.h"

namespace kvserve {

/// Loads `weights` onto `backend` as the implementation registered for
/// `config.model_type`, with a workspace for steps of up to `max_tokens`
/// tokens and `max_samples` sampled rows. An unregistered model_type is
/// InvalidArgument naming it and the registered ones.
absl::StatusOr<std::unique_ptr<Model>> CreateModel(const ModelConfig& config,
                                                   WeightSource& weights, Backend& backend,
                                                   int max_tokens, int max_samples);

/// The registered model_type values, sorted.
std::vector<std::string> RegisteredModelTypes();

}  // namespace kvserve
