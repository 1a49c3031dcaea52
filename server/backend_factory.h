// Picks and creates the compute backend from --device / --dtype.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "engine/core/engine_config.h"
#include "engine/model/model_config.h"
#include "kernels/backend.h"

namespace kvserve {

struct BackendOptions {
  std::string device = "auto";  // auto | cpu | cuda
  std::string dtype = "auto";   // auto | float32 | bfloat16 | float16
  double gpu_memory_utilization = 0.9;
  bool cuda_graphs = true;  // record and replay decode steps (CudaBackendOptions::graphs)
  std::string cuda_fast_kernels = "all";  // CudaBackendOptions::fast_kernels (FastKernels::Parse)
  bool cuda_tune_gemms = true;    // CudaBackendOptions::tune_gemms
  std::string cpu_activations = "auto";  // auto | float32 (CpuActivations)
};

/// "auto" is cuda when this build has the CUDA backend, a GPU is present and
/// the kernels serve the model's head dim and the block size; else cpu.
/// dtype "auto" is bfloat16 on the GPU; on the CPU (which computes in
/// float32) it keeps bfloat16 and Q8_0 weight matrices as the checkpoint
/// stores them, and --dtype float32 / bfloat16 converts every matrix.
/// On the GPU, copies gpu_memory_utilization into `engine_config`, from which
/// the engine sizes the KV pool once the weights are loaded (when
/// num_kv_blocks is 0). Errors name the flag: an unknown device or dtype, a
/// GPU that is absent or not built for, a model the kernels do not serve.
absl::StatusOr<std::unique_ptr<Backend>> MakeBackend(const BackendOptions& options,
                                                     const ModelConfig& model,
                                                     EngineConfig& engine_config);

}  // namespace kvserve
