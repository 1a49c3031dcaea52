// Model shapes kvserve-mkmodel can generate: the shapes of real checkpoints
// (for benchmarks on real model sizes) and tiny variants for tests.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/model/model_config.h"
#include "tools/synthetic_tokenizer.h"

namespace kvserve {

struct ModelPreset {
  std::string name;
  std::string description;
  ModelConfig config;
  SyntheticTokenizerSpec tokenizer;
};

const std::vector<ModelPreset>& ModelPresets();
absl::StatusOr<ModelPreset> FindPreset(const std::string& name);

/// config.json as transformers writes it for this config (rope_theta and
/// rope_scaling at the top level, the transformers 4 layout that most
/// published checkpoints have).
std::string ConfigJson(const ModelConfig& config);
/// generation_config.json: bos and eos ids.
std::string GenerationConfigJson(const ModelConfig& config);

}  // namespace kvserve
