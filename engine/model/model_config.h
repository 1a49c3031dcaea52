// The model's shape and hyperparameters, read from a Hugging Face config.json.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/kv/kv_cache.h"
#include "engine/model/sampling_defaults.h"
#include "kernels/dtype.h"

namespace kvserve {

struct RopeScaling {
  enum class Type { kNone, kLinear, kLlama3 };
  Type type = Type::kNone;
  double factor = 1.0;
  // llama3 only (Llama-3.1/3.2):
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int64_t original_max_position_embeddings = 8192;
};

struct ModelConfig {
  std::string model_type;    // "llama", "mistral" or "qwen2"
  std::string architecture;  // e.g. "LlamaForCausalLM"
  int vocab_size = 0;
  int hidden_size = 0;
  int intermediate_size = 0;
  int num_layers = 0;
  int num_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 0;
  /// Tokens per sequence (prompt + generated) the model is served with.
  int max_context = 0;
  float rms_norm_eps = 1e-6f;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  bool tie_word_embeddings = false;
  bool qkv_bias = false;  // qwen2, or llama's attention_bias
  bool o_bias = false;    // llama's attention_bias also biases o_proj
  bool mlp_bias = false;
  std::vector<int32_t> eos_token_ids;
  std::optional<int32_t> bos_token_id;
  DType checkpoint_dtype = DType::kFloat32;
  /// The sampling values the model recommends (generation_config.json, GGUF metadata).
  SamplingDefaults sampling_defaults;

  /// Checks the numbers fit together; InvalidArgument names the field.
  absl::Status Validate() const;
  /// The KV pool's per-block shape.
  KvCacheShape kv_cache_shape() const { return {num_layers, num_kv_heads, head_dim}; }
};

/// Parses config.json text. Unknown architectures and unsupported features are
/// refused with a message naming the field.
absl::StatusOr<ModelConfig> ParseModelConfig(absl::string_view json_text);

/// Merges the eos_token_id of generation_config.json (a number or a list)
/// into `config`, which Llama-3 instruct checkpoints rely on, and takes its
/// sampling defaults.
absl::Status MergeGenerationConfig(absl::string_view json_text, ModelConfig& config);

}  // namespace kvserve
