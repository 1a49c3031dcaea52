// The weights of a Llama-family model on the backend's device, in its compute
// dtype. q/k/v and gate/up are fused into one matrix each at load time, so a
// step runs one GEMM for each pair instead of two or three.
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "engine/model/model_config.h"
#include "engine/model/weight_source.h"
#include "kernels/backend.h"

namespace kvserve {

struct LayerWeights {
  Tensor input_norm;  // [hidden]
  Tensor qkv;         // [(H + 2*Hkv) * D, hidden]  rows: q | k | v
  Tensor qkv_bias;    // [(H + 2*Hkv) * D] or empty
  Tensor o_proj;      // [hidden, H * D]
  Tensor o_bias;      // [hidden] or empty
  Tensor post_norm;   // [hidden]
  Tensor gate_up;     // [2 * I, hidden]  rows: gate | up
  Tensor gate_up_bias;  // [2 * I] or empty
  Tensor down;        // [hidden, I]
  Tensor down_bias;   // [hidden] or empty
};

struct LlamaWeights {
  Tensor embed;       // [V, hidden]
  Tensor final_norm;  // [hidden]
  Tensor lm_head;     // [V, hidden]; the embedding itself when tied
  std::vector<LayerWeights> layers;
  std::vector<DeviceBufferPtr> storage;  // owns everything above
  size_t bytes = 0;
};

/// Loads and checks every tensor the config calls for (names and shapes as
/// Hugging Face writes them); tensors the model does not use are ignored.
absl::StatusOr<LlamaWeights> LoadLlamaWeights(const ModelConfig& config, WeightSource& source,
                                              Backend& backend);

}  // namespace kvserve
