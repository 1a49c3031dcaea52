// GGUF files as models: unsupported types, architectures and tokenizers are
// refused by name; llama.cpp names map to Hugging Face ones and the Q/K
// un-permutation inverts llama.cpp's permute; the Hugging Face fixture
// tiny-llama-gqa written as GGUF (Q/K permuted as llama.cpp's converter does)
// yields exactly the checkpoint's weights and its golden greedy tokens through
// the engine; Llama 3 rope_freqs become RoPE scaling parameters; presets of
// each architecture come back in Hugging Face layout and serve.
#include <functional>
#include <map>

#include <random>

#include "engine/loading/default_model.h"
#include "engine/loading/gguf_config.h"
#include "engine/loading/gguf_file.h"
#include "engine/loading/gguf_tokenizer.h"
#include "engine/loading/gguf_weights.h"
#include "engine/loading/model_loader.h"
#include "engine/loading/safetensors.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/engine_test_util.h"
#include "tests/gguf_builder.h"
#include "tests/golden_util.h"
#include "tests/test_paths.h"
#include "tools/model_presets.h"

namespace kvserve::testing {
namespace {

using ::testing::HasSubstr;

TEST(GgufWeightsTest, NamesMapToLlamaCpp) {
  EXPECT_EQ(GgufTensorName("model.embed_tokens.weight"), "token_embd.weight");
  EXPECT_EQ(GgufTensorName("lm_head.weight"), "output.weight");
  EXPECT_EQ(GgufTensorName("model.norm.weight"), "output_norm.weight");
  EXPECT_EQ(GgufTensorName("model.layers.12.self_attn.q_proj.bias"), "blk.12.attn_q.bias");
  EXPECT_EQ(GgufTensorName("model.layers.0.mlp.down_proj.weight"), "blk.0.ffn_down.weight");
  EXPECT_EQ(GgufTensorName("model.layers.0.post_attention_layernorm.weight"), "blk.0.ffn_norm.weight");
  EXPECT_EQ(GgufTensorName("model.layers.x.mlp.down_proj.weight"), std::nullopt);
  EXPECT_EQ(GgufTensorName("model.layers.0.mlp.nothing"), std::nullopt);
}

TEST(GgufWeightsTest, UnpermuteInvertsLlamaCppPermute) {
  const int64_t rows = 3 * 8, cols = 5;
  std::vector<float> w(rows * cols);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i);
  const std::vector<float> permuted = LlamaCppPermute(w, rows, cols, 3);
  EXPECT_NE(permuted, w);
  std::vector<float> back(w.size());
  UnpermuteQkRows(permuted.data(), rows, cols * sizeof(float), 3, back.data());
  EXPECT_EQ(back, w);
}

// tiny-llama-gqa's safetensors written as a float32 GGUF, as llama.cpp would.
std::string TinyLlamaGguf() {
  const std::string dir = FixtureDir("tiny-llama-gqa");
  auto source = OpenModelSource(dir);
  EXPECT_TRUE(source.ok()) << source.status();
  const ModelConfig c = source->config;
  auto st = SafetensorsFile::Open(dir + "/model.safetensors");
  EXPECT_TRUE(st.ok()) << st.status();
  GgufBuilder b;
  AddLlamaMetadata(b, c, c.vocab_size);
  for (const auto& [name, t] : (*st)->tensors()) {
    EXPECT_EQ(t.dtype, DType::kFloat32);
    std::vector<float> w(t.numel());
    std::memcpy(w.data(), t.data, t.bytes);
    const int64_t rows = t.shape[0], cols = t.shape.size() > 1 ? t.shape[1] : 1;
    if (name.find("q_proj") != std::string::npos) w = LlamaCppPermute(w, rows, cols, c.num_heads);
    if (name.find("k_proj") != std::string::npos) w = LlamaCppPermute(w, rows, cols, c.num_kv_heads);
    std::vector<uint64_t> dims(t.shape.rbegin(), t.shape.rend());
    b.Tensor(*GgufTensorName(name), dims, /*F32*/ 0, F32Bytes(w));
  }
  return WriteTemp("tiny-llama-gqa.gguf", b.Build());
}

TEST(GgufModelTest, TinyLlamaWeightsEqualTheCheckpoint) {
  const std::string path = TinyLlamaGguf();
  auto gguf = OpenModelSource(path);
  ASSERT_TRUE(gguf.ok()) << gguf.status();
  auto hf = OpenModelSource(FixtureDir("tiny-llama-gqa"));
  ASSERT_TRUE(hf.ok());
  EXPECT_EQ(gguf->config.num_layers, hf->config.num_layers);
  EXPECT_EQ(gguf->config.head_dim, hf->config.head_dim);
  EXPECT_FALSE(gguf->config.tie_word_embeddings);
  EXPECT_FALSE(gguf->chat_template.has_value());
  auto st = SafetensorsFile::Open(FixtureDir("tiny-llama-gqa") + "/model.safetensors");
  ASSERT_TRUE(st.ok());
  for (const auto& [name, t] : (*st)->tensors()) {
    ASSERT_TRUE(gguf->weights->Has(name)) << name;
    auto got = gguf->weights->Get(name);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->shape, t.shape) << name;
    ASSERT_EQ(got->bytes, t.bytes) << name;
    EXPECT_EQ(std::memcmp(got->data, t.data, t.bytes), 0) << name;
  }
}

TEST(GgufModelTest, TinyLlamaGivesTheGoldenGreedyTokens) {
  TestEngine t = MakeCpuEngine(TinyLlamaGguf());
  ASSERT_NE(t.engine, nullptr);
  int compared = 0;
  for (const GoldenCase& c : LoadGolden(FixtureDir("tiny-llama-gqa") + "/golden.json")) {
    const size_t steps = ComparableSteps(c);
    if (steps == 0) continue;
    auto sink = RunToCompletion(*t.engine, GreedyRequest(c.prompt, steps));
    std::vector<int32_t> expected(c.greedy.begin(), c.greedy.begin() + steps);
    EXPECT_EQ(sink->tokens, expected) << "prompt of " << c.prompt.size();
    compared += static_cast<int>(steps);
  }
  EXPECT_GT(compared, 40);
}

// Corrupted metadata (the file still parses) must give a config and a
// tokenizer or an error, never a crash: every value is checked before use.
TEST(GgufModelTest, CorruptedMetadataNeverCrashesTheLoader) {
  ModelConfig c = OpenModelSource(FixtureDir("tiny-llama-gqa"))->config;
  GgufBuilder b;
  AddLlamaMetadata(b, c, c.vocab_size);
  b.Tensor("token_embd.weight", {uint64_t(c.hidden_size), uint64_t(c.vocab_size)}, 0,
           F32Bytes(std::vector<float>(c.hidden_size * c.vocab_size)));
  c.rope_scaling = {RopeScaling::Type::kLlama3, 8.0, 1.0, 4.0, 64};
  b.Tensor("rope_freqs.weight", {uint64_t(c.head_dim / 2)}, 0, F32Bytes(LlamaCppRopeFactors(c)));
  const std::string good = b.Build();
  const size_t metadata_end = good.find("token_embd.weight");  // the tensor infos start here
  ASSERT_NE(metadata_end, std::string::npos);
  std::mt19937 rng(5);
  int parsed = 0, configs = 0, tokenizers = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    std::string bad = good;
    for (int f = 0; f < 1 + iter % 3; ++f) bad[rng() % metadata_end] = static_cast<char>(rng());
    auto file = GgufFile::FromBytes(reinterpret_cast<const uint8_t*>(bad.data()), bad.size(), "f");
    if (!file.ok()) continue;
    ++parsed;
    configs += GgufModelConfig(**file).ok();
    auto tokenizer = GgufTokenizer((*file)->metadata());
    if (tokenizer.ok()) {
      ++tokenizers;
      (void)(*tokenizer)->Encode("Hello <s> wörld 123", true);
    }
  }
  EXPECT_GT(parsed, 300);
  std::cout << parsed << " corrupted files parsed, " << configs << " configs, " << tokenizers
            << " tokenizers built, no crash\n";
}

TEST(GgufModelTest, UnsupportedThingsAreRefusedByName) {
  const std::string dir = FixtureDir("tiny-llama-gqa");
  ModelConfig c = OpenModelSource(dir)->config;
  auto refused = [&](GgufBuilder b, const std::string& name) {
    b.Tensor("token_embd.weight", {uint64_t(c.hidden_size), uint64_t(c.vocab_size)}, 0,
             F32Bytes(std::vector<float>(c.hidden_size * c.vocab_size)));
    return OpenModelSource(WriteTemp(name, b.Build())).status();
  };
  GgufBuilder iq4;
  AddLlamaMetadata(iq4, c, c.vocab_size);
  iq4.Tensor("blk.0.attn_q.weight", {256, 1}, /*IQ4_XS*/ 23, std::string(136, '\0'));
  EXPECT_THAT(refused(iq4, "iq4.gguf").message(), HasSubstr("blk.0.attn_q.weight has ggml type IQ4_XS"));

  GgufBuilder gemma;
  gemma.String("general.architecture", "gemma");
  EXPECT_THAT(refused(gemma, "gemma.gguf").message(), HasSubstr("architecture \"gemma\" is not supported"));

  GgufBuilder missing;
  missing.String("general.architecture", "llama");
  EXPECT_THAT(refused(missing, "missing.gguf").message(), HasSubstr("\"llama.block_count\""));

  auto absent = OpenModelSource("/nonexistent/model.gguf");
  EXPECT_TRUE(absl::IsNotFound(absent.status())) << absent.status();
  EXPECT_THAT(absent.status().message(), HasSubstr("/nonexistent/model.gguf: No such file"));

  GgufBuilder huge;
  ModelConfig long_context = c;
  long_context.max_context = 1 << 30;
  AddLlamaMetadata(huge, long_context, c.vocab_size);
  EXPECT_THAT(refused(huge, "huge.gguf").message(), HasSubstr("context_length\" is 1073741824"));

  GgufBuilder split;
  AddLlamaMetadata(split, c, c.vocab_size);
  split.U32("split.count", 3);
  EXPECT_THAT(refused(split, "split.gguf").message(), HasSubstr("split GGUF"));

  GgufBuilder bert;
  AddLlamaMetadata(bert, c, c.vocab_size, "bert");
  EXPECT_THAT(refused(bert, "bert.gguf").message(),
              HasSubstr("tokenizer.ggml.model \"bert\" is not supported (supported: gpt2, llama)"));

  GgufBuilder jais;
  AddLlamaMetadata(jais, c, c.vocab_size, "gpt2");
  jais.String("tokenizer.ggml.pre", "jais");
  EXPECT_THAT(refused(jais, "jais.gguf").message(), HasSubstr("tokenizer.ggml.pre \"jais\" is not supported"));
}

TEST(GgufConfigTest, Llama31RopeFreqsBecomeLlama3Scaling) {
  ModelConfig c = OpenModelSource(FixtureDir("tiny-llama-gqa"))->config;
  c.num_heads = 1;
  c.num_kv_heads = 1;
  c.head_dim = 128;  // Llama 3.1/3.2's head dim and RoPE
  c.rope_theta = 500000;
  c.rope_scaling = {RopeScaling::Type::kLlama3, 32.0, 1.0, 4.0, 8192};
  for (bool garbage : {false, true}) {
    GgufBuilder b;
    AddLlamaMetadata(b, c, c.vocab_size);
    b.Tensor("token_embd.weight", {uint64_t(c.hidden_size), uint64_t(c.vocab_size)}, 0,
             F32Bytes(std::vector<float>(c.hidden_size * c.vocab_size)));
    std::vector<float> factors = LlamaCppRopeFactors(c);
    if (garbage) factors[31] *= 1.01f;  // inside the medium band
    b.Tensor("rope_freqs.weight", {64}, 0, F32Bytes(factors));
    auto source = OpenModelSource(WriteTemp("llama31.gguf", b.Build()));
    if (garbage) {
      EXPECT_THAT(source.status().message(), HasSubstr("rope_freqs.weight[31]"));
      continue;
    }
    ASSERT_TRUE(source.ok()) << source.status();
    const RopeScaling& r = source->config.rope_scaling;
    EXPECT_EQ(r.type, RopeScaling::Type::kLlama3);
    EXPECT_EQ(r.factor, 32.0);
    EXPECT_EQ(r.low_freq_factor, 1.0);
    EXPECT_EQ(r.high_freq_factor, 4.0);
    EXPECT_EQ(r.original_max_position_embeddings, 8192);
  }
}

// llama.cpp's general.sampling.* keys (LLM_KV_GENERAL_SAMPLING_*) are the
// model's sampling defaults; a value out of range is dropped, not refused.
TEST(GgufConfigTest, GeneralSamplingKeysAreTheSamplingDefaults) {
  const ModelConfig c = OpenModelSource(FixtureDir("tiny-llama-gqa"))->config;
  auto load = [&](const std::function<void(GgufBuilder&)>& keys) {
    GgufBuilder b;
    AddLlamaMetadata(b, c, c.vocab_size);
    keys(b);
    b.Tensor("token_embd.weight", {uint64_t(c.hidden_size), uint64_t(c.vocab_size)}, 0,
             F32Bytes(std::vector<float>(c.hidden_size * c.vocab_size)));
    auto config = GgufModelConfig(**GgufFile::Open(WriteTemp("sampling.gguf", b.Build())));
    EXPECT_TRUE(config.ok()) << config.status();
    return config.ok() ? config->sampling_defaults : SamplingDefaults{};
  };
  EXPECT_TRUE(load([](GgufBuilder&) {}).empty());
  const SamplingDefaults d = load([](GgufBuilder& b) {
    b.F32("general.sampling.temp", 0.6f);
    b.F32("general.sampling.top_p", 0.95f);
    b.I32("general.sampling.top_k", 20);
    b.F32("general.sampling.min_p", 0.01f);
    b.F32("general.sampling.penalty_repeat", 1.1f);
  });
  EXPECT_FLOAT_EQ(*d.temperature, 0.6f);
  EXPECT_FLOAT_EQ(*d.top_p, 0.95f);
  EXPECT_EQ(*d.top_k, 20);
  EXPECT_FLOAT_EQ(*d.min_p, 0.01f);
  EXPECT_FLOAT_EQ(*d.repetition_penalty, 1.1f);
  EXPECT_THAT(d.source, HasSubstr("GGUF metadata"));
  const SamplingDefaults odd = load([](GgufBuilder& b) {
    b.I32("general.sampling.top_k", -1);  // off, as llama.cpp writes it
    b.F32("general.sampling.top_p", 0.f);
    b.String("general.sampling.temp", "warm");
  });
  EXPECT_EQ(odd.top_k, 0);
  EXPECT_FALSE(odd.top_p);
  EXPECT_FALSE(odd.temperature);
}

// A preset's random weights written as GGUF (llama: Q/K permuted as
// llama.cpp does; Q/K/V in F16 to take the convert-then-permute path; qwen2:
// untouched, with its biases): the source hands back the preset's weights,
// RoPE scaling (linear in metadata, Llama 3 as rope_freqs.weight) comes back
// as the preset's, and the engine serves the file.
class GgufPresetTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GgufPresetTest, WeightsComeBackInHuggingFaceLayout) {
  ModelPreset preset = *FindPreset(GetParam());
  const ModelConfig& c = preset.config;
  const bool llama = c.model_type != "qwen2";
  RandomWeightSource weights(c, 5);
  GgufBuilder b;
  if (llama) {
    AddLlamaMetadata(b, c, c.vocab_size);
  } else {
    b.String("general.architecture", "qwen2");
    b.U32("qwen2.block_count", c.num_layers);
    b.U32("qwen2.context_length", c.max_context);
    b.U32("qwen2.embedding_length", c.hidden_size);
    b.U32("qwen2.feed_forward_length", c.intermediate_size);
    b.U32("qwen2.attention.head_count", c.num_heads);
    b.U32("qwen2.attention.head_count_kv", c.num_kv_heads);
    b.F32("qwen2.rope.freq_base", static_cast<float>(c.rope_theta));
    b.F32("qwen2.attention.layer_norm_rms_epsilon", c.rms_norm_eps);
    std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
    for (int i = 3; i < c.vocab_size; ++i) tokens.push_back("t" + std::to_string(i));
    std::vector<float> scores(tokens.size(), 0.f);
    b.String("tokenizer.ggml.model", "llama");
    b.StringArray("tokenizer.ggml.tokens", tokens);
    b.F32Array("tokenizer.ggml.scores", scores);
  }
  // RoPE scaling as llama.cpp writes it: linear in metadata, llama3 as a
  // tensor of per-frequency factors (convert_hf_to_gguf.py's formula).
  if (c.rope_scaling.type == RopeScaling::Type::kLinear) {
    b.String("llama.rope.scaling.type", "linear");
    b.F32("llama.rope.scaling.factor", static_cast<float>(c.rope_scaling.factor));
  } else if (c.rope_scaling.type == RopeScaling::Type::kLlama3) {
    const std::vector<float> factors = LlamaCppRopeFactors(c);
    b.Tensor("rope_freqs.weight", {uint64_t(factors.size())}, /*F32*/ 0, F32Bytes(factors));
  }
  std::map<std::string, std::vector<float>> expected;
  for (const std::string& name : weights.TensorNames()) {
    const std::vector<int64_t> shape = weights.ShapeOf(name);
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::vector<float> w(n);
    weights.Fill(name, shape, 0, n, w.data());
    const bool half = name.find("_proj.weight") != std::string::npos &&
                      name.find("self_attn.o") == std::string::npos;
    if (half) {
      for (float& x : w) x = HalfToFloat(FloatToHalf(x));
    }
    expected[name] = w;
    const int64_t rows = shape[0], cols = shape.size() > 1 ? shape[1] : 1;
    if (llama && name.find("q_proj") != std::string::npos) w = LlamaCppPermute(w, rows, cols, c.num_heads);
    if (llama && name.find("k_proj") != std::string::npos) w = LlamaCppPermute(w, rows, cols, c.num_kv_heads);
    std::vector<uint64_t> dims(shape.rbegin(), shape.rend());
    if (half) {
      std::string bytes;
      for (float x : w) GgufBuilder::Append(bytes, FloatToHalf(x));
      b.Tensor(*GgufTensorName(name), dims, /*F16*/ 1, bytes);
    } else {
      b.Tensor(*GgufTensorName(name), dims, /*F32*/ 0, F32Bytes(w));
    }
  }
  auto source = OpenModelSource(WriteTemp(GetParam() + ".gguf", b.Build()));
  ASSERT_TRUE(source.ok()) << source.status();
  EXPECT_EQ(source->config.model_type, llama ? "llama" : "qwen2");
  EXPECT_EQ(source->config.qkv_bias, c.qkv_bias);
  EXPECT_EQ(source->config.tie_word_embeddings, c.tie_word_embeddings);
  const RopeScaling& want_rope = c.rope_scaling;
  const RopeScaling& got_rope = source->config.rope_scaling;
  EXPECT_EQ(got_rope.type, want_rope.type);
  EXPECT_EQ(got_rope.factor, want_rope.factor);
  if (want_rope.type == RopeScaling::Type::kLlama3) {
    EXPECT_EQ(got_rope.low_freq_factor, want_rope.low_freq_factor);
    EXPECT_EQ(got_rope.high_freq_factor, want_rope.high_freq_factor);
    EXPECT_EQ(got_rope.original_max_position_embeddings, want_rope.original_max_position_embeddings);
  }
  for (const auto& [name, want] : expected) {
    auto got = source->weights->Get(name);
    ASSERT_TRUE(got.ok()) << got.status();
    std::vector<float> values(got->numel());
    ASSERT_TRUE(ConvertToFloat32(got->data, got->dtype, got->numel(), values.data()).ok());
    EXPECT_EQ(values, want) << name;
  }
  // And the engine serves it.
  TestEngine t = MakeCpuEngine(WriteTemp(GetParam() + ".gguf", b.Build()));
  ASSERT_NE(t.engine, nullptr);
  auto sink = RunToCompletion(*t.engine, GreedyRequest({3, 4, 5}, 4));
  EXPECT_EQ(sink->tokens.size(), 4u);
}

INSTANTIATE_TEST_SUITE_P(Presets, GgufPresetTest,
                         ::testing::Values("tiny-qwen2", "tiny-mistral", "tiny-llama3"));

}  // namespace
}  // namespace kvserve::testing
