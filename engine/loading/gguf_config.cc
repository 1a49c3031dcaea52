#include "engine/loading/gguf_config.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/logging.h"
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

// llama.cpp's converter stores Llama 3.1's rope_scaling as per-frequency
// factors (rope_freqs.weight) computed from factor, low_freq_factor,
// high_freq_factor and original_max_position_embeddings; kvserve's RoPE takes
// those parameters, so they are recovered. The factor is the largest entry;
// low_freq_factor is 1 (every Llama 3.x). The medium band's entries are linear
// in 1/wavelength: two of them give original_max_position_embeddings and
// high_freq_factor; one gives the former with high_freq_factor 4; none leaves
// Llama 3.1's 8192 and 4 (or, if the band edges disagree, the largest context
// they allow). Whatever the candidate, the whole tensor is recomputed from it
// and must match, else the file is refused rather than served with wrong
// positions.
absl::StatusOr<RopeScaling> Llama3ScalingFromFactors(const GgufFile& file,
                                                     const GgufTensorInfo& t,
                                                     const ModelConfig& c) {
  const int64_t n = c.head_dim / 2;
  if (t.type != 0 || t.dims.size() != 1 || t.dims[0] != n) {
    return Refuse(file, absl::StrCat("rope_freqs.weight must be F32 [", n, "]"));
  }
  std::vector<float> got(n);
  std::memcpy(got.data(), t.data, n * sizeof(float));
  auto wavelen = [&](int64_t i) {
    return 2 * M_PI * std::pow(c.rope_theta, static_cast<double>(2 * i) / c.head_dim);
  };
  RopeScaling r;
  r.type = RopeScaling::Type::kLlama3;
  r.factor = *std::max_element(got.begin(), got.end());
  if (!(r.factor >= 1.0)) return Refuse(file, "rope_freqs.weight has factors below 1");
  if (r.factor == 1.0) return RopeScaling{};  // all ones: no scaling
  r.low_freq_factor = 1.0;
  r.high_freq_factor = 4.0;
  r.original_max_position_embeddings = 8192;
  std::vector<int64_t> medium;
  double min_scaled_wavelen = INFINITY;
  for (int64_t i = 0; i < n; ++i) {
    if (got[i] > 1.0f + 1e-4f && got[i] < r.factor * (1 - 1e-4)) medium.push_back(i);
    if (got[i] >= r.factor * (1 - 1e-4)) min_scaled_wavelen = std::min(min_scaled_wavelen, wavelen(i));
  }
  // smooth = (1/f - 1/factor) / (1 - 1/factor) = old/(high-1) · (1/wavelen) - 1/(high-1)
  auto smooth = [&](int64_t i) { return (1.0 / got[i] - 1.0 / r.factor) / (1.0 - 1.0 / r.factor); };
  if (medium.size() >= 2) {
    const int64_t i1 = medium.front(), i2 = medium.back();
    const double x1 = 1.0 / wavelen(i1), x2 = 1.0 / wavelen(i2);
    const double a = (smooth(i2) - smooth(i1)) / (x2 - x1);
    const double b = a * x1 - smooth(i1);
    if (a > 0 && b > 0) {
      r.high_freq_factor = std::round((1.0 + 1.0 / b) * 1e4) / 1e4;
      r.original_max_position_embeddings = std::llround(a / b);
    }
  } else if (medium.size() == 1) {
    const int64_t i = medium.front();
    r.original_max_position_embeddings =
        std::llround((smooth(i) * (r.high_freq_factor - 1) + 1) * wavelen(i));
  }
  auto mismatch = [&](const RopeScaling& p) -> std::optional<std::string> {
    const double old_len = static_cast<double>(p.original_max_position_embeddings);
    for (int64_t i = 0; i < n; ++i) {
      double want = 1.0;
      if (wavelen(i) > old_len / p.low_freq_factor) {
        want = p.factor;
      } else if (wavelen(i) >= old_len / p.high_freq_factor) {
        const double s = (old_len / wavelen(i) - p.low_freq_factor) /
                         (p.high_freq_factor - p.low_freq_factor);
        want = 1.0 / ((1 - s) / p.factor + s);
      }
      if (std::abs(got[i] - want) > 1e-4 * want) {
        return absl::StrCat("rope_freqs.weight[", i, "] = ", got[i], " where Llama 3 RoPE scaling (factor ",
                            p.factor, ", low_freq_factor 1, high_freq_factor ", p.high_freq_factor,
                            ", original context ", p.original_max_position_embeddings, ") gives ", want);
      }
    }
    return std::nullopt;
  };
  std::optional<std::string> error = mismatch(r);
  if (error && medium.empty() && std::isfinite(min_scaled_wavelen)) {
    RopeScaling edge = r;
    edge.original_max_position_embeddings = static_cast<int64_t>(std::floor(min_scaled_wavelen - 1e-6));
    if (!mismatch(edge)) return edge;
  }
  if (error) return Refuse(file, absl::StrCat(*error, ": not supported"));
  return r;
}

// The author's recommended sampling, under llama.cpp's keys
// (LLM_KV_GENERAL_SAMPLING_* in llama-arch.cpp).
SamplingDefaults GgufSamplingDefaults(const GgufFile& file) {
  SamplingDefaults d;
  d.source = absl::StrCat(file.name(), " (GGUF metadata)");
  static constexpr std::pair<const char*, const char*> kKeys[] = {
      {"general.sampling.temp", "temperature"},
      {"general.sampling.top_p", "top_p"},
      {"general.sampling.top_k", "top_k"},
      {"general.sampling.min_p", "min_p"},
      {"general.sampling.penalty_repeat", "repetition_penalty"}};
  for (const auto& [key, name] : kKeys) {
    if (!file.metadata().Has(key)) continue;
    absl::StatusOr<double> value = file.metadata().GetFloat(key);
    if (!value.ok()) {
      KV_LOG(WARNING) << value.status().message() << "; ignored";
      continue;
    }
    d.Set(name, *value, key);
  }
  return d;
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
  // The RoPE table is [context, head_dim] floats: a hostile value must not
  // turn into a huge allocation. Real models stop at 10M (Llama 4 Scout).
  constexpr int kMaxContext = 1 << 24;
  if (c.max_context > kMaxContext) {
    return Refuse(file, absl::StrCat("GGUF metadata \"", p, "context_length\" is ", c.max_context,
                                     ", more than the ", kMaxContext, " supported"));
  }
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
  if (const GgufTensorInfo* freqs = file.FindTensor("rope_freqs.weight")) {
    if (c.rope_scaling.type != RopeScaling::Type::kNone) {
      return Refuse(file, "both rope.scaling.type and rope_freqs.weight");
    }
    ASSIGN_OR_RETURN(c.rope_scaling, Llama3ScalingFromFactors(file, *freqs, c));
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
  c.sampling_defaults = GgufSamplingDefaults(file);
  return c;
}

}  // namespace kvserve
