// The Llama-family forward pass (Llama, Mistral, Qwen2), written once against
// the Backend op interface: embedding → N × (RMSNorm → fused QKV → RoPE →
// paged attention → o_proj → residual → RMSNorm → SwiGLU MLP → residual) →
// RMSNorm → LM head, computing logits only for the rows that are sampled.
#pragma once

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/kv/kv_cache.h"
#include "engine/model/llama_weights.h"
#include "engine/model/model.h"
#include "engine/model/model_config.h"
#include "engine/model/step_batch.h"
#include "kernels/backend.h"

namespace kvserve {

class LlamaModel : public Model {
 public:
  /// Loads the weights and allocates the activation workspace for steps of
  /// up to `max_tokens` tokens and `max_samples` sampled rows.
  static absl::StatusOr<std::unique_ptr<LlamaModel>> Create(const ModelConfig& config,
                                                            WeightSource& weights,
                                                            Backend& backend, int max_tokens,
                                                            int max_samples);

  absl::StatusOr<Tensor> Forward(const StepBatch& batch, const KvCache& cache) override;

  const ModelConfig& config() const override { return config_; }
  size_t weight_bytes() const override { return weights_.bytes; }
  size_t workspace_bytes() const override { return workspace_bytes_; }

 private:
  LlamaModel(const ModelConfig& config, Backend& backend) : config_(config), backend_(backend) {}
  absl::Status AllocateWorkspace(int max_tokens, int max_samples);
  /// The largest step Forward accepts, for Backend::Reserve.
  StepLimits Limits() const;
  absl::Status Attention(const StepBatch& batch, const PagedKvCache& cache, Tensor q, Tensor k,
                         Tensor v, Tensor out);

  ModelConfig config_;
  Backend& backend_;
  LlamaWeights weights_;
  AttentionShape attention_shape_;
  Tensor rope_table_;  // [max_context, D] float32
  int max_tokens_ = 0;
  int max_samples_ = 0;

  // Activations, [max_tokens, ...] each; views of `storage_`.
  std::vector<DeviceBufferPtr> storage_;
  size_t workspace_bytes_ = 0;
  Tensor residual_;  // [T, hidden]
  Tensor normed_;    // [T, hidden]
  Tensor qkv_;       // [T, (H + 2*Hkv) * D]
  Tensor q_, k_, v_; // [T, H, D], [T, Hkv, D], [T, Hkv, D]
  Tensor attn_;      // [T, H, D]
  Tensor proj_;      // [T, hidden]  o_proj and down_proj outputs
  Tensor gate_up_;   // [T, 2 * I]
  Tensor act_;       // [T, I]
  Tensor last_hidden_;  // [S, hidden]
  Tensor logits_;       // [S, V] float32
};

}  // namespace kvserve
