// Picks and creates the compute backend from --device / --dtype.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "engine/engine_config.h"
#include "engine/model_config.h"
#include "kernels/backend.h"

namespace kvserve {

struct BackendOptions {
  std::string device = "auto";  // auto | cpu | cuda
  std::string dtype = "auto";   // auto | float32 | bfloat16 | float16
  double gpu_memory_utilization = 0.9;
};

/// "auto" is cuda when this build has the CUDA backend and a GPU is present,
/// else cpu. On the GPU, sizes `engine_config.num_kv_blocks` from
/// gpu_memory_utilization when it is 0.
absl::StatusOr<std::unique_ptr<Backend>> MakeBackend(const BackendOptions& options,
                                                     const ModelConfig& model,
                                                     EngineConfig& engine_config);

}  // namespace kvserve
