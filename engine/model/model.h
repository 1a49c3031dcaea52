// The interface the serving core runs a model through. One implementation
// per architecture family (llama_model.h); model_registry.h picks it from the
// checkpoint's `model_type`.
#pragma once

#include <cstddef>

#include "absl/status/statusor.h"
#include "engine/kv/kv_cache.h"
#include "engine/model/model_config.h"
#include "engine/model/step_batch.h"
#include "kernels/tensor.h"

namespace kvserve {

class Model {
 public:
  virtual ~Model() = default;

  /// Runs one step: writes the step's K/V into `cache` and returns the logits
  /// of the sampled rows, [S, V] float32 on the device, valid until the next call.
  virtual absl::StatusOr<Tensor> Forward(const StepBatch& batch, const KvCache& cache) = 0;

  virtual const ModelConfig& config() const = 0;
  /// Device bytes held by the weights and by the activation workspace.
  virtual size_t weight_bytes() const = 0;
  virtual size_t workspace_bytes() const = 0;
};

}  // namespace kvserve
