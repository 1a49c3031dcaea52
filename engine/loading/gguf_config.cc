#include "engine/loading/gguf_config.h"

#include <limits>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace kvserve {
namespace {

absl::Status Refuse(const GgufFile& file, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(file.name(), ": ", what));
}

// A positive count that fits the config's int fields.
absl::StatusOr<int> PositiveInt(const GgufFile& file, const std::string& key) {
  ASSIGN_OR_RETURN(uint64_t v, file.metadata().GetUint(key));
  if (v == 0 || v > static_cast<uint64_t>(std::numeric_limits<int32_t>::max())) {
    return Refuse(file, absl::StrCat("GGUF metadata \"", key, "\" is ", v,
                                     ", expected 1 to 2147483647"));
  }
  return static_cast<int>(v);
}

absl::StatusOr<int> OptionalPositiveInt(const GgufFile& file, const std::string& key, int dflt) {
  if (!file.metadata().Has(key)) return dflt;
  return PositiveInt(file, key);
}

absl::StatusOr<std::optional<int32_t>> OptionalTokenId(const GgufFile& file, const std::string& key) {
  if (!file.metadata().Has(key)) return std::nullopt;
  ASSIGN_OR_RETURN(uint64_t v, file.metadata().GetUint(key));
  if (v > static_cast<uint64_t>(std::numeric_limits<int32_t>::max())) {
    return Refuse(file, absl::StrCat("GGUF metadata \"", key, "\" is ", v, ", not a token id"));
  }
  return static_cast<int32_t>(v);
}

}  // namespace

absl::StatusOr<ModelConfig> GgufModelConfig(const GgufFile& file) {
  const GgufMetadata& md = file.metadata();
  ASSIGN_OR_RETURN(const std::string arch, md.GetString("general.architecture"));
  ModelConfig c;
  if (arch == "llama") {
    c.model_type = "llama";
    c.architecture = "LlamaForCausalLM";
  } else if (arch == "qwen2") {
    c.model_type = "qwen2";
    c.architecture = "Qwen2ForCausalLM";
  } else {
    return Refuse(file, absl::StrCat("GGUF architecture \"", arch,
                                     "\" is not supported (supported: llama, qwen2)"));
  }
  const std::string p = arch + ".";
  ASSIGN_OR_RETURN(c.num_layers, PositiveInt(file, p + "block_count"));
  ASSIGN_OR_RETURN(c.hidden_size, PositiveInt(file, p + "embedding_length"));
  ASSIGN_OR_RETURN(c.intermediate_size, PositiveInt(file, p + "feed_forward_length"));
  ASSIGN_OR_RETURN(c.num_heads, PositiveInt(file, p + "attention.head_count"));
  ASSIGN_OR_RETURN(c.num_kv_heads, OptionalPositiveInt(file, p + "attention.head_count_kv", c.num_heads));
  ASSIGN_OR_RETURN(c.head_dim, OptionalPositiveInt(file, p + "attention.key_length",
                                                   c.hidden_size / c.num_heads));
  ASSIGN_OR_RETURN(const int value_dim, OptionalPositiveInt(file, p + "attention.value_length", c.head_dim));
  if (value_dim != c.head_dim) {
    return Refuse(file, absl::StrCat(p, "attention.value_length ", value_dim,
                                     " differs from the key length ", c.head_dim,
                                     " (not supported)"));
  }
  ASSIGN_OR_RETURN(const int rope_dims, OptionalPositiveInt(file, p + "rope.dimension_count", c.head_dim));
  if (rope_dims != c.head_dim) {
    return Refuse(file, absl::StrCat(p, "rope.dimension_count ", rope_dims,
                                     " is not the head dim ", c.head_dim,
                                     " (partial rotary embeddings are not supported)"));
  }
  ASSIGN_OR_RETURN(c.max_context, PositiveInt(file, p + "context_length"));
  ASSIGN_OR_RETURN(const double eps, md.GetFloat(p + "attention.layer_norm_rms_epsilon"));
  c.rms_norm_eps = static_cast<float>(eps);
  if (md.Has(p + "rope.freq_base")) {
    ASSIGN_OR_RETURN(c.rope_theta, md.GetFloat(p + "rope.freq_base"));
  }
  if (md.Has(p + "rope.scaling.type")) {
    ASSIGN_OR_RETURN(const std::string type, md.GetString(p + "rope.scaling.type"));
    if (type == "linear") {
      c.rope_scaling.type = RopeScaling::Type::kLinear;
      ASSIGN_OR_RETURN(c.rope_scaling.factor, md.GetFloat(p + "rope.scaling.factor"));
    } else if (type != "none") {
      return Refuse(file, absl::StrCat(p, "rope.scaling.type \"", type,
                                       "\" is not supported (supported: none, linear)"));
    }
  }
  // Llama 3.1+ files carry their frequency scaling as a tensor, not metadata.
  if (file.FindTensor("rope_freqs.weight") != nullptr) {
    return Refuse(file, "tensor rope_freqs.weight (Llama-3.1-style RoPE frequency factors) is "
                        "not supported");
  }

  const GgufTensorInfo* embed = file.FindTensor("token_embd.weight");
  if (embed == nullptr || embed->dims.size() != 2) {
    return Refuse(file, "no 2-D tensor token_embd.weight");
  }
  if (embed->dims[1] > std::numeric_limits<int32_t>::max()) {
    return Refuse(file, "token_embd.weight has too many rows");
  }
  c.vocab_size = static_cast<int>(embed->dims[1]);
  c.tie_word_embeddings = file.FindTensor("output.weight") == nullptr;
  c.qkv_bias = file.FindTensor("blk.0.attn_q.bias") != nullptr;
  if (arch == "qwen2" && !c.qkv_bias) return Refuse(file, "qwen2 file without blk.0.attn_q.bias");
  c.o_bias = file.FindTensor("blk.0.attn_output.bias") != nullptr;
  c.mlp_bias = false;
  ASSIGN_OR_RETURN(c.bos_token_id, OptionalTokenId(file, "tokenizer.ggml.bos_token_id"));
  ASSIGN_OR_RETURN(std::optional<int32_t> eos, OptionalTokenId(file, "tokenizer.ggml.eos_token_id"));
  if (eos) c.eos_token_ids.push_back(*eos);
  // End-of-turn (e.g. Llama 3's <|eot_id|>) also ends a reply.
  ASSIGN_OR_RETURN(std::optional<int32_t> eot, OptionalTokenId(file, "tokenizer.ggml.eot_token_id"));
  if (eot && eot != eos) c.eos_token_ids.push_back(*eot);
  // Quantized weights are dequantized to float32; the backend converts from there.
  c.checkpoint_dtype = DType::kFloat32;
  if (absl::Status s = c.Validate(); !s.ok()) return Refuse(file, s.message());
  return c;
}

}  // namespace kvserve
