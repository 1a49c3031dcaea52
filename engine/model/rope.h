// Rotary position embedding tables, computed once at start-up.
#pragma once

#include <vector>

#include "engine/model/model_config.h"

namespace kvserve {

/// The per-pair inverse frequencies after rope scaling (default, linear,
/// llama3), as Hugging Face computes them, in float32.
std::vector<float> RopeInverseFrequencies(const ModelConfig& config);

/// [max_positions, head_dim] float32: cos(pos · inv_freq) in the first half of
/// each row, sin in the second half.
std::vector<float> BuildRopeTable(const ModelConfig& config, int max_positions);

}  // namespace kvserve
