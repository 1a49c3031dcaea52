#include "engine/model/model_config.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "base/json_fields.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "nlohmann/json.hpp"

namespace kvserve {
namespace {

using Json = nlohmann::json;

const json::FieldErrors kConfigJson{"config.json", /*quote_field=*/true};

absl::Status FieldError(absl::string_view field, absl::string_view problem) {
  return kConfigJson(field, problem);
}

absl::StatusOr<std::optional<int64_t>> GetInt(const Json& j, absl::string_view field) {
  return json::OptionalInt(j, field, field, kConfigJson);
}

absl::StatusOr<int> RequireInt(const Json& j, absl::string_view field) {
  ASSIGN_OR_RETURN(std::optional<int64_t> v, GetInt(j, field));
  if (!v) return FieldError(field, "is missing");
  if (*v <= 0 || *v > (1 << 30)) return FieldError(field, absl::StrCat("must be in [1, 2^30], got ", *v));
  return static_cast<int>(*v);
}

absl::StatusOr<std::optional<double>> GetNumber(const Json& j, absl::string_view field) {
  return json::OptionalNumber(j, field, field, kConfigJson);
}

absl::StatusOr<std::optional<bool>> GetBool(const Json& j, absl::string_view field) {
  return json::OptionalBool(j, field, field, kConfigJson);
}

// eos_token_id is a number or a list of numbers.
absl::StatusOr<std::vector<int32_t>> GetTokenIdList(const Json& j, absl::string_view field) {
  std::vector<int32_t> ids;
  auto it = j.find(field);
  if (it == j.end() || it->is_null()) return ids;
  auto add = [&](const Json& v) -> absl::Status {
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > INT32_MAX) {
      return FieldError(field, "must be a token id or a list of token ids");
    }
    ids.push_back(static_cast<int32_t>(v.get<int64_t>()));
    return absl::OkStatus();
  };
  if (it->is_array()) {
    for (const Json& v : *it) RETURN_IF_ERROR(add(v));
  } else {
    RETURN_IF_ERROR(add(*it));
  }
  return ids;
}

absl::Status ParseRopeScaling(const Json& scaling, absl::string_view field, RopeScaling& out) {
  if (!scaling.is_object()) return FieldError(field, "must be an object");
  std::string type;
  if (auto it = scaling.find("rope_type"); it != scaling.end() && it->is_string()) {
    type = it->get<std::string>();
  } else if (auto it2 = scaling.find("type"); it2 != scaling.end() && it2->is_string()) {
    type = it2->get<std::string>();
  }
  if (type.empty() || type == "default") {
    out.type = RopeScaling::Type::kNone;
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(std::optional<double> factor, GetNumber(scaling, "factor"));
  if (type == "linear") {
    if (!factor || *factor <= 0) return FieldError(absl::StrCat(field, ".factor"), "must be > 0");
    out.type = RopeScaling::Type::kLinear;
    out.factor = *factor;
    return absl::OkStatus();
  }
  if (type == "llama3") {
    if (!factor || *factor <= 0) return FieldError(absl::StrCat(field, ".factor"), "must be > 0");
    out.type = RopeScaling::Type::kLlama3;
    out.factor = *factor;
    ASSIGN_OR_RETURN(std::optional<double> low, GetNumber(scaling, "low_freq_factor"));
    ASSIGN_OR_RETURN(std::optional<double> high, GetNumber(scaling, "high_freq_factor"));
    ASSIGN_OR_RETURN(std::optional<int64_t> original,
                     GetInt(scaling, "original_max_position_embeddings"));
    out.low_freq_factor = low.value_or(1.0);
    out.high_freq_factor = high.value_or(4.0);
    out.original_max_position_embeddings = original.value_or(8192);
    if (out.high_freq_factor <= out.low_freq_factor) {
      return FieldError(absl::StrCat(field, ".high_freq_factor"), "must exceed low_freq_factor");
    }
    return absl::OkStatus();
  }
  return FieldError(absl::StrCat(field, ".rope_type"),
                    absl::StrCat("\"", type, "\" is not supported (default, linear, llama3 are)"));
}

}  // namespace

absl::StatusOr<ModelConfig> ParseModelConfig(absl::string_view json_text) {
  Json j = Json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return absl::InvalidArgumentError("config.json: not valid JSON");
  if (!j.is_object()) return absl::InvalidArgumentError("config.json: not a JSON object");

  ModelConfig c;
  if (auto it = j.find("model_type"); it != j.end() && it->is_string()) c.model_type = it->get<std::string>();
  if (c.model_type != "llama" && c.model_type != "mistral" && c.model_type != "qwen2") {
    return FieldError("model_type", absl::StrCat("\"", c.model_type,
                                                 "\" is not supported (llama, mistral, qwen2 are)"));
  }
  if (auto it = j.find("architectures"); it != j.end() && it->is_array() && !it->empty() &&
                                         (*it)[0].is_string()) {
    c.architecture = (*it)[0].get<std::string>();
    static const char* kKnown[] = {"LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM"};
    if (std::find(std::begin(kKnown), std::end(kKnown), c.architecture) == std::end(kKnown)) {
      return FieldError("architectures", absl::StrCat("\"", c.architecture, "\" is not supported"));
    }
  }
  if (auto it = j.find("hidden_act"); it != j.end() && it->is_string() && it->get<std::string>() != "silu") {
    return FieldError("hidden_act", absl::StrCat("\"", it->get<std::string>(), "\" is not supported (silu is)"));
  }

  ASSIGN_OR_RETURN(c.vocab_size, RequireInt(j, "vocab_size"));
  ASSIGN_OR_RETURN(c.hidden_size, RequireInt(j, "hidden_size"));
  ASSIGN_OR_RETURN(c.intermediate_size, RequireInt(j, "intermediate_size"));
  ASSIGN_OR_RETURN(c.num_layers, RequireInt(j, "num_hidden_layers"));
  ASSIGN_OR_RETURN(c.num_heads, RequireInt(j, "num_attention_heads"));
  ASSIGN_OR_RETURN(std::optional<int64_t> kv_heads, GetInt(j, "num_key_value_heads"));
  c.num_kv_heads = static_cast<int>(kv_heads.value_or(c.num_heads));
  ASSIGN_OR_RETURN(std::optional<int64_t> head_dim, GetInt(j, "head_dim"));
  if (head_dim) {
    c.head_dim = static_cast<int>(*head_dim);
  } else {
    if (c.hidden_size % c.num_heads != 0) {
      return FieldError("head_dim", "is missing and hidden_size is not a multiple of num_attention_heads");
    }
    c.head_dim = c.hidden_size / c.num_heads;
  }
  ASSIGN_OR_RETURN(c.max_context, RequireInt(j, "max_position_embeddings"));
  // Mistral's sliding window: below the window, attention is plain causal, so
  // serving at most `sliding_window` tokens per sequence is exact.
  ASSIGN_OR_RETURN(std::optional<int64_t> window, GetInt(j, "sliding_window"));
  ASSIGN_OR_RETURN(std::optional<bool> use_window, GetBool(j, "use_sliding_window"));
  if (window && *window > 0 && *window < c.max_context && use_window.value_or(true)) {
    KV_LOG(WARNING) << "config.json: sliding_window " << *window
                    << " < max_position_embeddings; serving at most " << *window
                    << " tokens per sequence";
    c.max_context = static_cast<int>(*window);
  }

  ASSIGN_OR_RETURN(std::optional<double> eps, GetNumber(j, "rms_norm_eps"));
  if (eps) c.rms_norm_eps = static_cast<float>(*eps);

  // rope_theta: top level (transformers 4) or inside rope_parameters (transformers 5).
  ASSIGN_OR_RETURN(std::optional<double> theta, GetNumber(j, "rope_theta"));
  if (auto it = j.find("rope_parameters"); it != j.end() && !it->is_null()) {
    if (!it->is_object()) return FieldError("rope_parameters", "must be an object");
    ASSIGN_OR_RETURN(std::optional<double> inner, GetNumber(*it, "rope_theta"));
    if (inner) theta = inner;
    RETURN_IF_ERROR(ParseRopeScaling(*it, "rope_parameters", c.rope_scaling));
  }
  if (auto it = j.find("rope_scaling"); it != j.end() && !it->is_null()) {
    RETURN_IF_ERROR(ParseRopeScaling(*it, "rope_scaling", c.rope_scaling));
  }
  if (theta) c.rope_theta = *theta;

  ASSIGN_OR_RETURN(std::optional<bool> tie, GetBool(j, "tie_word_embeddings"));
  c.tie_word_embeddings = tie.value_or(false);
  ASSIGN_OR_RETURN(std::optional<bool> attention_bias, GetBool(j, "attention_bias"));
  ASSIGN_OR_RETURN(std::optional<bool> mlp_bias, GetBool(j, "mlp_bias"));
  if (c.model_type == "qwen2") {
    c.qkv_bias = true;  // Qwen2 always biases q/k/v, never o_proj
  } else {
    c.qkv_bias = attention_bias.value_or(false);
    c.o_bias = c.qkv_bias;
  }
  c.mlp_bias = mlp_bias.value_or(false);

  ASSIGN_OR_RETURN(c.eos_token_ids, GetTokenIdList(j, "eos_token_id"));
  ASSIGN_OR_RETURN(std::vector<int32_t> bos, GetTokenIdList(j, "bos_token_id"));
  if (!bos.empty()) c.bos_token_id = bos[0];

  std::string dtype_name = "float32";
  for (const char* field : {"torch_dtype", "dtype"}) {
    if (auto it = j.find(field); it != j.end() && it->is_string()) dtype_name = it->get<std::string>();
  }
  absl::StatusOr<DType> dtype = ParseDType(dtype_name);
  if (!dtype.ok()) return FieldError("torch_dtype", dtype.status().message());
  c.checkpoint_dtype = *dtype;

  RETURN_IF_ERROR(c.Validate());
  return c;
}

absl::Status ModelConfig::Validate() const {
  auto positive = [](absl::string_view field, int64_t v) -> absl::Status {
    return v > 0 ? absl::OkStatus() : FieldError(field, absl::StrCat("must be > 0, got ", v));
  };
  RETURN_IF_ERROR(positive("vocab_size", vocab_size));
  RETURN_IF_ERROR(positive("hidden_size", hidden_size));
  RETURN_IF_ERROR(positive("intermediate_size", intermediate_size));
  RETURN_IF_ERROR(positive("num_hidden_layers", num_layers));
  RETURN_IF_ERROR(positive("num_attention_heads", num_heads));
  RETURN_IF_ERROR(positive("num_key_value_heads", num_kv_heads));
  RETURN_IF_ERROR(positive("head_dim", head_dim));
  RETURN_IF_ERROR(positive("max_position_embeddings", max_context));
  if (num_heads % num_kv_heads != 0) {
    return FieldError("num_key_value_heads",
                      absl::StrCat(num_kv_heads, " does not divide num_attention_heads ", num_heads));
  }
  if (head_dim % 2 != 0) return FieldError("head_dim", "must be even (rotary embeddings)");
  if (!(rms_norm_eps > 0)) return FieldError("rms_norm_eps", "must be > 0");
  if (!(rope_theta > 0)) return FieldError("rope_theta", "must be > 0");
  for (int32_t id : eos_token_ids) {
    if (id >= vocab_size) return FieldError("eos_token_id", absl::StrCat(id, " is not below vocab_size"));
  }
  if (bos_token_id && *bos_token_id >= vocab_size) {
    return FieldError("bos_token_id", absl::StrCat(*bos_token_id, " is not below vocab_size"));
  }
  return absl::OkStatus();
}

absl::Status MergeGenerationConfig(absl::string_view json_text, ModelConfig& config) {
  Json j = Json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError("generation_config.json: not a JSON object");
  }
  absl::StatusOr<std::vector<int32_t>> eos = GetTokenIdList(j, "eos_token_id");
  if (!eos.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("generation_config.json: ", eos.status().message()));
  }
  for (int32_t id : *eos) {
    if (id >= config.vocab_size) continue;
    if (std::find(config.eos_token_ids.begin(), config.eos_token_ids.end(), id) ==
        config.eos_token_ids.end()) {
      config.eos_token_ids.push_back(id);
    }
  }
  config.sampling_defaults = SamplingDefaultsFromGenerationConfig(j);
  return absl::OkStatus();
}

}  // namespace kvserve
