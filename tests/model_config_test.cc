// config.json as it exists in the wild (llama, mistral, qwen2; transformers 4
// and 5 layouts), and clear errors naming the field for what kvserve refuses.
#include "engine/model/model_config.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace kvserve {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::json;

Json Base() {
  return Json::parse(R"({
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_act": "silu",
    "vocab_size": 1000, "hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 2,
    "num_attention_heads": 8, "num_key_value_heads": 2, "max_position_embeddings": 4096,
    "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "bos_token_id": 1, "eos_token_id": 2,
    "torch_dtype": "bfloat16"})");
}

ModelConfig Parse(const Json& j) {
  auto c = ParseModelConfig(j.dump());
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? *c : ModelConfig{};
}

std::string Error(const Json& j) {
  auto c = ParseModelConfig(j.dump());
  EXPECT_FALSE(c.ok());
  return c.ok() ? "" : std::string(c.status().message());
}

TEST(ModelConfigTest, LlamaWithDerivedHeadDim) {
  ModelConfig c = Parse(Base());
  EXPECT_EQ(c.head_dim, 32);  // 256 / 8
  EXPECT_EQ(c.num_kv_heads, 2);
  EXPECT_EQ(c.max_context, 4096);
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_FALSE(c.qkv_bias);
  EXPECT_EQ(c.checkpoint_dtype, DType::kBFloat16);
  EXPECT_THAT(c.eos_token_ids, ::testing::ElementsAre(2));
  EXPECT_EQ(c.bos_token_id, 1);
  EXPECT_EQ(c.rope_scaling.type, RopeScaling::Type::kNone);
}

TEST(ModelConfigTest, ExplicitHeadDimAndMissingKvHeads) {
  Json j = Base();
  j["head_dim"] = 64;
  j.erase("num_key_value_heads");
  ModelConfig c = Parse(j);
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_EQ(c.num_kv_heads, 8);  // MHA
}

TEST(ModelConfigTest, RopeThetaInRopeParametersAsTransformers5Writes) {
  Json j = Base();
  j.erase("rope_theta");
  j["rope_parameters"] = {{"rope_theta", 500000.0}, {"rope_type", "default"}};
  j["dtype"] = "float32";
  j.erase("torch_dtype");
  ModelConfig c = Parse(j);
  EXPECT_EQ(c.rope_theta, 500000.0);
  EXPECT_EQ(c.checkpoint_dtype, DType::kFloat32);
}

TEST(ModelConfigTest, Llama3AndLinearRopeScaling) {
  Json j = Base();
  j["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 32.0}, {"low_freq_factor", 1.0},
                       {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 8192}};
  ModelConfig c = Parse(j);
  EXPECT_EQ(c.rope_scaling.type, RopeScaling::Type::kLlama3);
  EXPECT_EQ(c.rope_scaling.factor, 32.0);
  EXPECT_EQ(c.rope_scaling.original_max_position_embeddings, 8192);
  j["rope_scaling"] = {{"type", "linear"}, {"factor", 2.0}};  // the older "type" key
  c = Parse(j);
  EXPECT_EQ(c.rope_scaling.type, RopeScaling::Type::kLinear);
  EXPECT_EQ(c.rope_scaling.factor, 2.0);
  // transformers 5 puts the scaling inside rope_parameters.
  j.erase("rope_scaling");
  j["rope_parameters"] = {{"rope_theta", 500000.0}, {"rope_type", "llama3"}, {"factor", 8.0},
                          {"low_freq_factor", 1.0}, {"high_freq_factor", 4.0},
                          {"original_max_position_embeddings", 8192}};
  c = Parse(j);
  EXPECT_EQ(c.rope_scaling.type, RopeScaling::Type::kLlama3);
  EXPECT_EQ(c.rope_theta, 500000.0);
}

TEST(ModelConfigTest, Qwen2HasQkvBiasAndLlamaAttentionBiasAlsoBiasesOutput) {
  Json j = Base();
  j["model_type"] = "qwen2";
  j["architectures"] = {"Qwen2ForCausalLM"};
  j["tie_word_embeddings"] = true;
  j["use_sliding_window"] = false;
  j["sliding_window"] = 1024;  // ignored: use_sliding_window is false
  ModelConfig c = Parse(j);
  EXPECT_TRUE(c.qkv_bias);
  EXPECT_FALSE(c.o_bias);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.max_context, 4096);
  j = Base();
  j["attention_bias"] = true;
  c = Parse(j);
  EXPECT_TRUE(c.qkv_bias);
  EXPECT_TRUE(c.o_bias);
}

TEST(ModelConfigTest, MistralSlidingWindowCapsTheContext) {
  Json j = Base();
  j["model_type"] = "mistral";
  j["architectures"] = {"MistralForCausalLM"};
  j["sliding_window"] = 2048;
  EXPECT_EQ(Parse(j).max_context, 2048);
  j["sliding_window"] = nullptr;  // Mistral v0.2+
  EXPECT_EQ(Parse(j).max_context, 4096);
}

TEST(ModelConfigTest, EosAsListAndFromGenerationConfig) {
  Json j = Base();
  j["eos_token_id"] = {2, 7};
  ModelConfig c = Parse(j);
  EXPECT_THAT(c.eos_token_ids, ::testing::ElementsAre(2, 7));
  ASSERT_TRUE(MergeGenerationConfig(R"({"eos_token_id": [7, 9], "bos_token_id": 1})", c).ok());
  EXPECT_THAT(c.eos_token_ids, ::testing::ElementsAre(2, 7, 9));
  EXPECT_FALSE(MergeGenerationConfig("{", c).ok());
}

// The HTTP API's defaults for fields a request leaves out (docs/api.md): the
// sampling fields vLLM takes from generation_config.json, only when the file
// samples; out-of-range values are dropped, never refused (the model still loads).
TEST(ModelConfigTest, SamplingDefaultsFromGenerationConfig) {
  ModelConfig c = Parse(Base());
  EXPECT_TRUE(c.sampling_defaults.empty());
  const char* sampling = R"({"do_sample": true, "temperature": 0.7, "top_p": 0.8, "top_k": 20,
                             "min_p": 0.05, "repetition_penalty": 1.05, "max_new_tokens": 9})";
  ASSERT_TRUE(MergeGenerationConfig(sampling, c).ok());
  const SamplingDefaults& d = c.sampling_defaults;
  EXPECT_FLOAT_EQ(*d.temperature, 0.7f);
  EXPECT_FLOAT_EQ(*d.top_p, 0.8f);
  EXPECT_EQ(*d.top_k, 20);
  EXPECT_FLOAT_EQ(*d.min_p, 0.05f);
  EXPECT_FLOAT_EQ(*d.repetition_penalty, 1.05f);
  EXPECT_EQ(d.source, "generation_config.json");
  EXPECT_EQ(d.ToString(),
            "temperature 0.7, top_p 0.8, top_k 20, min_p 0.05, repetition_penalty 1.05");

  // Greedy in Transformers: the sampling fields do not apply, the penalty does.
  const char* greedy =
      R"({"do_sample": false, "temperature": 0.6, "top_p": 0.9, "repetition_penalty": 1.1})";
  ASSERT_TRUE(MergeGenerationConfig(greedy, c).ok());
  EXPECT_FALSE(c.sampling_defaults.temperature);
  EXPECT_FALSE(c.sampling_defaults.top_p);
  EXPECT_FLOAT_EQ(*c.sampling_defaults.repetition_penalty, 1.1f);

  // No do_sample: the values are taken (as vLLM does); temperature 0 is greedy.
  ASSERT_TRUE(MergeGenerationConfig(R"({"temperature": 0, "top_k": -1})", c).ok());
  EXPECT_EQ(*c.sampling_defaults.temperature, 0.f);
  EXPECT_EQ(*c.sampling_defaults.top_k, 0);  // off

  const char* out_of_range = R"({"temperature": -1, "top_p": 0, "min_p": 2,
                                 "repetition_penalty": 0, "top_k": 1.5, "eos_token_id": 3})";
  ASSERT_TRUE(MergeGenerationConfig(out_of_range, c).ok());
  EXPECT_TRUE(c.sampling_defaults.empty()) << c.sampling_defaults.ToString();
  ASSERT_TRUE(MergeGenerationConfig(R"({"temperature": "hot", "top_p": null})", c).ok());
  EXPECT_TRUE(c.sampling_defaults.empty());
}

TEST(ModelConfigTest, RefusalsNameTheField) {
  Json j = Base();
  j["model_type"] = "gpt2";
  EXPECT_THAT(Error(j), HasSubstr("\"model_type\""));
  j = Base();
  j["architectures"] = {"LlamaForSequenceClassification"};
  EXPECT_THAT(Error(j), HasSubstr("\"architectures\""));
  j = Base();
  j["hidden_act"] = "gelu";
  EXPECT_THAT(Error(j), HasSubstr("\"hidden_act\""));
  j = Base();
  j.erase("hidden_size");
  EXPECT_THAT(Error(j), HasSubstr("\"hidden_size\" is missing"));
  j = Base();
  j["num_hidden_layers"] = -3;
  EXPECT_THAT(Error(j), HasSubstr("\"num_hidden_layers\""));
  j = Base();
  j["num_key_value_heads"] = 3;
  EXPECT_THAT(Error(j), HasSubstr("\"num_key_value_heads\""));
  j = Base();
  j["vocab_size"] = "big";
  EXPECT_THAT(Error(j), HasSubstr("\"vocab_size\" must be an integer"));
  j = Base();
  j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
  EXPECT_THAT(Error(j), HasSubstr("rope_scaling.rope_type"));
  j = Base();
  j["rope_scaling"] = {{"rope_type", "linear"}};
  EXPECT_THAT(Error(j), HasSubstr("rope_scaling.factor"));
  j = Base();
  j["eos_token_id"] = 5000;
  EXPECT_THAT(Error(j), HasSubstr("\"eos_token_id\""));
  j = Base();
  j["torch_dtype"] = "int8";
  EXPECT_THAT(Error(j), HasSubstr("\"torch_dtype\""));
  j = Base();
  j["hidden_size"] = 250;  // not a multiple of 8 heads, and no head_dim
  EXPECT_THAT(Error(j), HasSubstr("\"head_dim\""));
  auto bad = ParseModelConfig("{\"model_type\": ");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("not valid JSON"));
  EXPECT_FALSE(ParseModelConfig("[1, 2]").ok());
}

}  // namespace
}  // namespace kvserve
