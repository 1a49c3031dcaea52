// The GGUF reader and loader on files built here: a good file opens; every
// truncation and thousands of random corruptions are refused with a message
// (never a crash); each malformed field is refused naming it; unsupported
// types, architectures and tokenizers are refused by name. The Hugging Face
// fixture tiny-llama-gqa written as GGUF (Q/K rows permuted as llama.cpp's
// converter does) yields exactly the checkpoint's weights and its golden
// greedy tokens through the engine.
#include <filesystem>
#include <fstream>
#include <random>

#include "engine/loading/gguf_file.h"
#include "engine/loading/gguf_weights.h"
#include "engine/loading/model_loader.h"
#include "engine/loading/safetensors.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/engine_test_util.h"
#include "tests/gguf_builder.h"
#include "tests/golden_util.h"
#include "tests/test_paths.h"

namespace kvserve::testing {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

absl::StatusOr<std::unique_ptr<GgufFile>> Parse(const std::string& bytes) {
  return GgufFile::FromBytes(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "t.gguf");
}

std::string WriteTemp(const std::string& name, const std::string& bytes) {
  const fs::path path = fs::path(::testing::TempDir()) / (std::to_string(::getpid()) + "_" + name);
  std::ofstream(path, std::ios::binary) << bytes;
  return path.string();
}

// A small well-formed file: a few metadata types, two tensors.
GgufBuilder SmallFile() {
  GgufBuilder b;
  b.String("general.architecture", "llama");
  b.U32("llama.block_count", 1);
  b.F32("llama.rope.freq_base", 10000.f);
  b.Bool("tokenizer.ggml.add_bos_token", true);
  b.StringArray("tokenizer.ggml.tokens", {"a", "b", "ab"});
  b.I32Array("tokenizer.ggml.token_type", {1, 1, 1});
  b.Tensor("a.weight", {4, 2}, /*F32*/ 0, F32Bytes({1, 2, 3, 4, 5, 6, 7, 8}));
  b.Tensor("b.weight", {32}, /*Q8_0*/ 8, std::string(34, '\x01'));
  return b;
}

TEST(GgufFileTest, GoodFileOpens) {
  auto file = Parse(SmallFile().Build());
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ((*file)->version(), 3u);
  EXPECT_EQ(*(*file)->metadata().GetString("general.architecture"), "llama");
  EXPECT_EQ(*(*file)->metadata().GetUint("llama.block_count"), 1u);
  EXPECT_EQ(*(*file)->metadata().GetFloat("llama.rope.freq_base"), 10000.0);
  EXPECT_THAT(*(*file)->metadata().GetStringArray("tokenizer.ggml.tokens"),
              ::testing::ElementsAre("a", "b", "ab"));
  const GgufTensorInfo* a = (*file)->FindTensor("a.weight");
  ASSERT_NE(a, nullptr);
  EXPECT_THAT(a->dims, ::testing::ElementsAre(4, 2));
  EXPECT_EQ(a->bytes, 32u);
  float first;
  std::memcpy(&first, a->data, 4);
  EXPECT_EQ(first, 1.f);
  EXPECT_EQ((*file)->FindTensor("b.weight")->bytes, 34u);
  // A wrong type is an error naming the key and both types.
  auto wrong = (*file)->metadata().GetString("llama.block_count");
  EXPECT_THAT(wrong.status().message(), HasSubstr("\"llama.block_count\" is uint32, expected string"));
  EXPECT_THAT((*file)->metadata().GetUint("missing.key").status().message(), HasSubstr("missing.key"));
}

TEST(GgufFileTest, EveryTruncationIsRefused) {
  const std::string good = SmallFile().Build();
  for (size_t n = 0; n < good.size(); ++n) {
    auto file = Parse(good.substr(0, n));
    EXPECT_FALSE(file.ok()) << "prefix of " << n << " bytes was accepted";
    if (!file.ok()) EXPECT_THAT(file.status().message(), HasSubstr("t.gguf: invalid GGUF file"));
  }
}

TEST(GgufFileTest, RandomCorruptionNeverCrashes) {
  const std::string good = SmallFile().Build();
  std::mt19937 rng(11);
  int refused = 0;
  for (int iter = 0; iter < 5000; ++iter) {
    std::string bad = good;
    const int flips = 1 + iter % 4;
    for (int f = 0; f < flips; ++f) bad[rng() % bad.size()] = static_cast<char>(rng());
    auto file = Parse(bad);
    if (!file.ok()) {
      ++refused;
      EXPECT_FALSE(file.status().message().empty());
    }
  }
  EXPECT_GT(refused, 1000);  // most corruptions are caught; none crashes
}

// Patches `bytes` at the first occurrence of `find` (which must exist).
std::string Patch(std::string bytes, const std::string& find, const std::string& replace) {
  const size_t at = bytes.find(find);
  EXPECT_NE(at, std::string::npos) << find;
  if (at != std::string::npos) bytes.replace(at, find.size(), replace);
  return bytes;
}

template <typename V>
std::string Pod(V v) {
  std::string s;
  GgufBuilder::Append(s, v);
  return s;
}

TEST(GgufFileTest, MalformedFieldsAreRefusedByName) {
  const std::string good = SmallFile().Build();
  struct Case {
    std::string bytes;
    std::string message;
  };
  std::vector<Case> cases = {
      {"GGUX" + good.substr(4), "magic"},
      {Patch(good, "GGUF" + Pod(uint32_t{3}), "GGUF" + Pod(uint32_t{1})), "version 1"},
      {Patch(good, "GGUF" + Pod(uint32_t{3}), "GGUF" + Pod(uint32_t{3u << 24})), "big-endian"},
      {Patch(good, Pod(uint64_t{2}) + Pod(uint64_t{6}), Pod(uint64_t{2}) + Pod(uint64_t{1} << 60)),
       "kv_count"},
      {Patch(good, Pod(uint64_t{2}) + Pod(uint64_t{6}), Pod(uint64_t{1} << 60) + Pod(uint64_t{6})),
       "tensor_count"},
      // The architecture string claims more bytes than the file has.
      {Patch(good, Pod(uint64_t{5}) + "llama", Pod(uint64_t{1} << 40) + "llama"), "general.architecture"},
      // The token array claims 2^40 strings.
      {Patch(good, Pod(uint32_t{8}) + Pod(uint64_t{3}) + Pod(uint64_t{1}) + "a",
             Pod(uint32_t{8}) + Pod(uint64_t{1} << 40) + Pod(uint64_t{1}) + "a"),
       "tokenizer.ggml.tokens"},
      {Patch(good, Pod(uint32_t{7}) + Pod(uint8_t{1}), Pod(uint32_t{7}) + Pod(uint8_t{2})), "bool value 2"},
      {Patch(good, Pod(uint32_t{4}) + Pod(uint32_t{1}), Pod(uint32_t{99}) + Pod(uint32_t{1})),
       "unknown value type 99"},
      // a.weight: 5 dimensions; a zero dimension; an unknown type; a misaligned offset.
      {Patch(good, "a.weight" + Pod(uint32_t{2}), "a.weight" + Pod(uint32_t{5})), "5 dimensions"},
      {Patch(good, "a.weight" + Pod(uint32_t{2}) + Pod(uint64_t{4}),
             "a.weight" + Pod(uint32_t{2}) + Pod(uint64_t{0})),
       "impossible dimension 0"},
      {Patch(good, Pod(uint64_t{2}) + Pod(uint32_t{0}) + Pod(uint64_t{0}),
             Pod(uint64_t{2}) + Pod(uint32_t{77}) + Pod(uint64_t{0})),
       "unknown ggml type 77"},
      {Patch(good, Pod(uint64_t{2}) + Pod(uint32_t{0}) + Pod(uint64_t{0}),
             Pod(uint64_t{2}) + Pod(uint32_t{0}) + Pod(uint64_t{4})),
       "not a multiple of the 32-byte alignment"},
      // b.weight: 33 elements are not whole Q8_0 blocks; an offset past the end.
      {Patch(good, "b.weight" + Pod(uint32_t{1}) + Pod(uint64_t{32}),
             "b.weight" + Pod(uint32_t{1}) + Pod(uint64_t{33})),
       "not a multiple of Q8_0's block of 32"},
      {Patch(good, Pod(uint32_t{8}) + Pod(uint64_t{32}), Pod(uint32_t{8}) + Pod(uint64_t{1} << 20)),
       "runs past"},
      // b.weight placed on top of a.weight.
      {Patch(good, Pod(uint32_t{8}) + Pod(uint64_t{32}), Pod(uint32_t{8}) + Pod(uint64_t{0})),
       "overlap"},
      // The same tensor name twice.
      {Patch(good, "b.weight", "a.weight"), "appears twice"},
  };
  for (const Case& c : cases) {
    auto file = Parse(c.bytes);
    ASSERT_FALSE(file.ok()) << "accepted; expected: " << c.message;
    EXPECT_THAT(file.status().message(), HasSubstr(c.message));
  }
  GgufBuilder dup = SmallFile();
  dup.U32("llama.block_count", 2);
  EXPECT_THAT(Parse(dup.Build()).status().message(), HasSubstr("\"llama.block_count\" appears twice"));
  GgufBuilder align = SmallFile();
  align.U32("general.alignment", 24);
  EXPECT_THAT(Parse(align.Build(24)).status().message(), HasSubstr("general.alignment"));
  GgufBuilder align64 = SmallFile();
  align64.U32("general.alignment", 64);
  EXPECT_TRUE(Parse(align64.Build(64)).ok());
}

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

// llama.cpp's convert_hf_to_gguf.py permute(): reshape(n_head, 2, D/2, cols).swapaxes(1, 2).
std::vector<float> LlamaCppPermute(const std::vector<float>& w, int64_t rows, int64_t cols, int n_head) {
  std::vector<float> out(w.size());
  const int64_t d = rows / n_head;
  for (int64_t h = 0; h < n_head; ++h)
    for (int64_t j = 0; j < 2; ++j)
      for (int64_t i = 0; i < d / 2; ++i)
        std::copy_n(&w[(h * d + j * d / 2 + i) * cols], cols, &out[(h * d + 2 * i + j) * cols]);
  return out;
}

TEST(GgufWeightsTest, UnpermuteInvertsLlamaCppPermute) {
  const int64_t rows = 3 * 8, cols = 5;
  std::vector<float> w(rows * cols);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i);
  const std::vector<float> permuted = LlamaCppPermute(w, rows, cols, 3);
  EXPECT_NE(permuted, w);
  std::vector<float> back(w.size());
  UnpermuteQkRows(permuted.data(), rows, cols, 3, back.data());
  EXPECT_EQ(back, w);
}

// Metadata for a llama model of `c`'s shape with a SentencePiece vocabulary
// of `vocab` tokens: <unk> <s> </s>, the 256 byte tokens, then pieces.
void AddLlamaMetadata(GgufBuilder& b, const ModelConfig& c, int vocab,
                      const std::string& tokenizer_model = "llama") {
  b.String("general.architecture", "llama");
  b.U32("llama.block_count", c.num_layers);
  b.U32("llama.context_length", c.max_context);
  b.U32("llama.embedding_length", c.hidden_size);
  b.U32("llama.feed_forward_length", c.intermediate_size);
  b.U32("llama.attention.head_count", c.num_heads);
  b.U32("llama.attention.head_count_kv", c.num_kv_heads);
  b.U32("llama.attention.key_length", c.head_dim);
  b.U32("llama.rope.dimension_count", c.head_dim);
  b.F32("llama.rope.freq_base", static_cast<float>(c.rope_theta));
  b.F32("llama.attention.layer_norm_rms_epsilon", c.rms_norm_eps);
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<int32_t> types = {2, 3, 3};
  for (int byte = 0; byte < 256; ++byte) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", byte);
    tokens.push_back(name);
    types.push_back(6);
  }
  const std::string letters = "abcdefghijklmnopqrstuvwxyz";
  for (size_t i = 0; tokens.size() < static_cast<size_t>(vocab); ++i) {
    tokens.push_back(i < letters.size() ? std::string(1, letters[i])
                                        : "\xE2\x96\x81" + std::string(1, letters[i % 26]) +
                                              std::string(1, letters[(i / 26) % 26]));
    types.push_back(1);
  }
  std::vector<float> scores;
  for (size_t i = 0; i < tokens.size(); ++i) scores.push_back(-static_cast<float>(i));
  b.String("tokenizer.ggml.model", tokenizer_model);
  b.StringArray("tokenizer.ggml.tokens", tokens);
  b.F32Array("tokenizer.ggml.scores", scores);
  b.I32Array("tokenizer.ggml.token_type", types);
  b.U32("tokenizer.ggml.bos_token_id", 1);
  b.U32("tokenizer.ggml.eos_token_id", 2);
  b.U32("tokenizer.ggml.unknown_token_id", 0);
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

TEST(GgufModelTest, UnsupportedThingsAreRefusedByName) {
  const std::string dir = FixtureDir("tiny-llama-gqa");
  ModelConfig c = OpenModelSource(dir)->config;
  auto refused = [&](GgufBuilder b, const std::string& name) {
    b.Tensor("token_embd.weight", {uint64_t(c.hidden_size), uint64_t(c.vocab_size)}, 0,
             F32Bytes(std::vector<float>(c.hidden_size * c.vocab_size)));
    return OpenModelSource(WriteTemp(name, b.Build())).status();
  };
  GgufBuilder q2k;
  AddLlamaMetadata(q2k, c, c.vocab_size);
  q2k.Tensor("blk.0.attn_q.weight", {256, 1}, /*Q2_K*/ 10, std::string(84, '\0'));
  EXPECT_THAT(refused(q2k, "q2k.gguf").message(), HasSubstr("blk.0.attn_q.weight has ggml type Q2_K"));

  GgufBuilder gemma;
  gemma.String("general.architecture", "gemma");
  EXPECT_THAT(refused(gemma, "gemma.gguf").message(), HasSubstr("architecture \"gemma\" is not supported"));

  GgufBuilder missing;
  missing.String("general.architecture", "llama");
  EXPECT_THAT(refused(missing, "missing.gguf").message(), HasSubstr("\"llama.block_count\""));

  GgufBuilder bert;
  AddLlamaMetadata(bert, c, c.vocab_size, "bert");
  EXPECT_THAT(refused(bert, "bert.gguf").message(),
              HasSubstr("tokenizer.ggml.model \"bert\" is not supported (supported: gpt2, llama)"));

  GgufBuilder jais;
  AddLlamaMetadata(jais, c, c.vocab_size, "gpt2");
  jais.String("tokenizer.ggml.pre", "jais");
  EXPECT_THAT(refused(jais, "jais.gguf").message(), HasSubstr("tokenizer.ggml.pre \"jais\" is not supported"));
}

}  // namespace
}  // namespace kvserve::testing
