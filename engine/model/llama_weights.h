// The weights of a Llama-family model on the backend's device, in its compute
// dtype (or the storage dtype the backend keeps, Backend::MatrixWeightDType).
// q/k/v and gate/up are one matrix each, so a step runs one GEMM for each
// group: fused into one tensor on a device the weights are uploaded to, kept
// as parts on a backend that borrows a mapped file's bytes (the CPU), where
// parts may differ in storage dtype (Backend::LinearParts).
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "engine/model/model_config.h"
#include "engine/model/weight_source.h"
#include "kernels/backend.h"

namespace kvserve {

struct LayerWeights {
  Tensor input_norm;  // [hidden]
  std::vector<Tensor> qkv;  // [(H + 2*Hkv) * D, hidden]  rows: q | k | v (one or three parts)
  Tensor qkv_bias;    // [(H + 2*Hkv) * D] or empty
  Tensor o_proj;      // [hidden, H * D]
  Tensor o_bias;      // [hidden] or empty
  Tensor post_norm;   // [hidden]
  std::vector<Tensor> gate_up;  // [2 * I, hidden]  rows: gate | up (one or two parts)
  Tensor gate_up_bias;  // [2 * I] or empty
  Tensor down;        // [hidden, I]
  Tensor down_bias;   // [hidden] or empty
};

struct LlamaWeights {
  Tensor embed;       // [V, hidden]
  Tensor final_norm;  // [hidden]
  Tensor lm_head;     // [V, hidden]; the embedding itself when tied
  std::vector<LayerWeights> layers;
  std::vector<DeviceBufferPtr> storage;  // owns everything above but what is borrowed
  std::vector<std::shared_ptr<const void>> borrowed;  // keeps the mapped file of borrowed parts
  size_t bytes = 0;           // weight bytes, owned and borrowed
  size_t borrowed_bytes = 0;  // of which computed from in place in a mapped file
};

/// Loads and checks every tensor the config calls for (names and shapes as
/// Hugging Face writes them); tensors the model does not use are ignored.
absl::StatusOr<LlamaWeights> LoadLlamaWeights(const ModelConfig& config, WeightSource& source,
                                              Backend& backend);

}  // namespace kvserve
