#include "tools/model_presets.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/loading/default_model.h"
#include "nlohmann/json.hpp"

namespace kvserve {
namespace {

ModelConfig Llama(int vocab, int hidden, int inter, int layers, int heads, int kv_heads,
                  int context, double theta, float eps, bool tie) {
  ModelConfig c;
  c.model_type = "llama";
  c.architecture = "LlamaForCausalLM";
  c.vocab_size = vocab;
  c.hidden_size = hidden;
  c.intermediate_size = inter;
  c.num_layers = layers;
  c.num_heads = heads;
  c.num_kv_heads = kv_heads;
  c.head_dim = hidden / heads;
  c.max_context = context;
  c.rope_theta = theta;
  c.rms_norm_eps = eps;
  c.tie_word_embeddings = tie;
  c.checkpoint_dtype = DType::kBFloat16;
  return c;
}

ModelConfig WithLlama3Rope(ModelConfig c, double factor) {
  c.rope_scaling.type = RopeScaling::Type::kLlama3;
  c.rope_scaling.factor = factor;
  c.rope_scaling.low_freq_factor = 1.0;
  c.rope_scaling.high_freq_factor = 4.0;
  c.rope_scaling.original_max_position_embeddings = 8192;
  return c;
}

ModelConfig AsQwen2(ModelConfig c) {
  c.model_type = "qwen2";
  c.architecture = "Qwen2ForCausalLM";
  c.qkv_bias = true;
  return c;
}

ModelConfig AsMistral(ModelConfig c) {
  c.model_type = "mistral";
  c.architecture = "MistralForCausalLM";
  return c;
}

// Llama-3 specials: <|begin_of_text|> first (BOS), <|end_of_text|>, then
// reserved ones, with <|eot_id|> at offset 9, as in the real vocabulary.
std::vector<std::string> Llama3Specials(int count) {
  std::vector<std::string> s;
  for (int i = 0; i < count; ++i) s.push_back(absl::StrCat("<|reserved_special_token_", i, "|>"));
  s[0] = "<|begin_of_text|>";
  if (count > 1) s[1] = "<|end_of_text|>";
  if (count > 9) s[9] = "<|eot_id|>";
  return s;
}

SyntheticTokenizerSpec ByteLevel(int vocab, std::vector<std::string> specials,
                                 const char* regex = kLlama3SplitRegex, bool add_bos = true) {
  return {TokenizerStyle::kByteLevel, vocab, std::move(specials), regex, 1, add_bos};
}

SyntheticTokenizerSpec SentencePiece(int vocab) { return {TokenizerStyle::kSentencePiece, vocab, {}, "", 1}; }

std::vector<ModelPreset> MakePresets() {
  std::vector<ModelPreset> p;
  {
    ModelConfig c = WithLlama3Rope(Llama(128256, 2048, 8192, 16, 32, 8, 131072, 500000, 1e-5f, true), 32);
    c.bos_token_id = 128000;
    c.eos_token_ids = {128001, 128008, 128009};
    p.push_back({"llama-3.2-1b", "Llama-3.2-1B shape: 16 layers, hidden 2048, 32/8 heads, vocab 128256, llama3 RoPE",
                 c, ByteLevel(128256, Llama3Specials(256))});
  }
  {
    ModelConfig c = WithLlama3Rope(Llama(128256, 4096, 14336, 32, 32, 8, 131072, 500000, 1e-5f, false), 8);
    c.bos_token_id = 128000;
    c.eos_token_ids = {128001, 128008, 128009};
    p.push_back({"llama-3.1-8b", "Llama-3.1-8B shape: 32 layers, hidden 4096, 32/8 heads", c,
                 ByteLevel(128256, Llama3Specials(256))});
  }
  {
    ModelConfig c = Llama(32000, 2048, 5632, 22, 32, 4, 2048, 10000, 1e-5f, false);
    c.bos_token_id = 1;
    c.eos_token_ids = {2};
    p.push_back({"tinyllama-1.1b", "TinyLlama-1.1B shape: 22 layers, hidden 2048, 32/4 heads, vocab 32000",
                 c, SentencePiece(32000)});
  }
  {
    ModelConfig c = AsQwen2(Llama(151936, 896, 4864, 24, 14, 2, 32768, 1000000, 1e-6f, true));
    c.eos_token_ids = {151643};
    p.push_back({"qwen2-0.5b", "Qwen2-0.5B shape: 24 layers, hidden 896, 14/2 heads, qkv bias, vocab 151936",
                 c, ByteLevel(151936, {"<|endoftext|>", "<|im_start|>", "<|im_end|>"}, kQwen2SplitRegex,
                           /*add_bos=*/false)});
  }
  {
    ModelConfig c = AsMistral(Llama(32000, 4096, 14336, 32, 32, 8, 32768, 1000000, 1e-5f, false));
    c.bos_token_id = 1;
    c.eos_token_ids = {2};
    p.push_back({"mistral-7b", "Mistral-7B-v0.2 shape: 32 layers, hidden 4096, 32/8 heads, vocab 32000", c,
                 SentencePiece(32000)});
  }
  // Tiny variants for tests: each exercises a loader path.
  {
    ModelConfig c = WithLlama3Rope(Llama(1024, 128, 256, 2, 8, 2, 1024, 500000, 1e-5f, true), 8);
    c.rope_scaling.original_max_position_embeddings = 128;  // so scaling changes real positions
    c.bos_token_id = 1024 - 16;
    c.eos_token_ids = {1024 - 15, 1024 - 7};
    p.push_back({"tiny-llama3", "tiny Llama-3 style: llama3 RoPE, tied embeddings, GQA 4:1, eos list", c,
                 ByteLevel(1024, Llama3Specials(16))});
  }
  {
    ModelConfig c = AsQwen2(Llama(1000, 128, 320, 2, 4, 2, 1024, 1000000, 1e-6f, false));
    c.eos_token_ids = {1000 - 3};
    p.push_back({"tiny-qwen2", "tiny Qwen2 style: qkv bias, byte-level tokenizer", c,
                 ByteLevel(1000, {"<|endoftext|>", "<|im_start|>", "<|im_end|>"}, kQwen2SplitRegex,
                           /*add_bos=*/false)});
  }
  {
    ModelConfig c = AsMistral(Llama(600, 96, 256, 2, 6, 2, 1024, 10000, 1e-5f, false));
    c.rope_scaling.type = RopeScaling::Type::kLinear;
    c.rope_scaling.factor = 2.0;
    c.bos_token_id = 1;
    c.eos_token_ids = {2};
    p.push_back({"tiny-mistral", "tiny Mistral style: linear RoPE scaling, SentencePiece byte-fallback tokenizer",
                 c, SentencePiece(600)});
  }
  {
    ModelConfig c = DefaultModelConfig();
    p.push_back({"default", "the built-in default model (random weights, byte tokenizer)", c,
                 {TokenizerStyle::kBytes, c.vocab_size, {}, "", 1}});
  }
  return p;
}

}  // namespace

const std::vector<ModelPreset>& ModelPresets() {
  static const std::vector<ModelPreset>* presets = new std::vector<ModelPreset>(MakePresets());
  return *presets;
}

absl::StatusOr<ModelPreset> FindPreset(const std::string& name) {
  std::string known;
  for (const ModelPreset& p : ModelPresets()) {
    if (p.name == name) return p;
    absl::StrAppend(&known, known.empty() ? "" : ", ", p.name);
  }
  return absl::InvalidArgumentError(absl::StrCat("--preset: unknown \"", name, "\" (", known, ")"));
}

std::string ConfigJson(const ModelConfig& c) {
  nlohmann::ordered_json j;
  j["architectures"] = {c.architecture};
  j["model_type"] = c.model_type;
  j["hidden_act"] = "silu";
  j["vocab_size"] = c.vocab_size;
  j["hidden_size"] = c.hidden_size;
  j["intermediate_size"] = c.intermediate_size;
  j["num_hidden_layers"] = c.num_layers;
  j["num_attention_heads"] = c.num_heads;
  j["num_key_value_heads"] = c.num_kv_heads;
  // Qwen2 configs leave head_dim out (derived); Llama ones carry it.
  if (c.model_type != "qwen2") j["head_dim"] = c.head_dim;
  j["max_position_embeddings"] = c.max_context;
  j["rms_norm_eps"] = std::stod(absl::StrFormat("%g", c.rms_norm_eps));  // 1e-05, not 9.99e-06
  j["rope_theta"] = c.rope_theta;
  switch (c.rope_scaling.type) {
    case RopeScaling::Type::kNone: j["rope_scaling"] = nullptr; break;
    case RopeScaling::Type::kLinear:
      j["rope_scaling"] = {{"rope_type", "linear"}, {"factor", c.rope_scaling.factor}};
      break;
    case RopeScaling::Type::kLlama3:
      j["rope_scaling"] = {{"rope_type", "llama3"},
                           {"factor", c.rope_scaling.factor},
                           {"low_freq_factor", c.rope_scaling.low_freq_factor},
                           {"high_freq_factor", c.rope_scaling.high_freq_factor},
                           {"original_max_position_embeddings", c.rope_scaling.original_max_position_embeddings}};
      break;
  }
  j["tie_word_embeddings"] = c.tie_word_embeddings;
  if (c.model_type == "llama") {
    j["attention_bias"] = c.qkv_bias;
    j["mlp_bias"] = c.mlp_bias;
  }
  if (c.model_type == "qwen2") {
    j["use_sliding_window"] = false;
    j["sliding_window"] = c.max_context;
  }
  if (c.model_type == "mistral") j["sliding_window"] = nullptr;
  if (c.bos_token_id) j["bos_token_id"] = *c.bos_token_id;
  if (c.eos_token_ids.size() == 1) {
    j["eos_token_id"] = c.eos_token_ids[0];
  } else {
    j["eos_token_id"] = c.eos_token_ids;
  }
  j["torch_dtype"] = std::string(DTypeName(c.checkpoint_dtype));
  return j.dump(2);
}

std::string GenerationConfigJson(const ModelConfig& c) {
  nlohmann::ordered_json j;
  if (c.bos_token_id) j["bos_token_id"] = *c.bos_token_id;
  j["eos_token_id"] = c.eos_token_ids;
  j["do_sample"] = false;
  return j.dump(2);
}

}  // namespace kvserve
