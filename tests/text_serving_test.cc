// Text in, text out through the server on generated checkpoints with real
// tokenizer.json files: a sharded bf16 Qwen2-style checkpoint (qkv bias, no
// BOS) and a Llama-3-style one (BOS prepended by the post-processor). The
// streamed text is exactly the detokenized ids; stop strings that span token
// boundaries end the stream in the right place.
#include <filesystem>
#include <fstream>

#include "engine/loading/checkpoint.h"
#include "engine/loading/default_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/server_test_util.h"
#include "tools/model_presets.h"
#include "tools/safetensors_writer.h"

namespace kvserve::testing {
namespace {

namespace fs = std::filesystem;

// Writes `preset` as kvserve-mkmodel does.
std::string WriteCheckpoint(const std::string& preset_name, DType dtype, int64_t shard_bytes) {
  const fs::path dir = fs::path(::testing::TempDir()) /
                       ("kvserve_text_" + preset_name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  ModelPreset preset = *FindPreset(preset_name);
  preset.config.checkpoint_dtype = dtype;
  RandomWeightSource weights(preset.config, 7);
  std::vector<TensorToWrite> tensors;
  for (const std::string& name : weights.TensorNames()) {
    const std::vector<int64_t> shape = weights.ShapeOf(name);
    tensors.push_back({name, dtype, shape, [&weights, name, shape](int64_t off, int64_t n, float* out) {
                         weights.Fill(name, shape, off, n, out);
                       }});
  }
  EXPECT_TRUE(WriteSafetensors(dir.string(), tensors, shard_bytes).ok());
  std::ofstream(dir / "config.json") << ConfigJson(preset.config);
  std::ofstream(dir / "generation_config.json") << GenerationConfigJson(preset.config);
  std::ofstream(dir / "tokenizer.json") << *MakeTokenizerJson(preset.tokenizer);
  return dir.string();
}

v1::GenerateRequest TextRequest(const std::string& text, uint32_t max_new_tokens) {
  v1::GenerateRequest r;
  r.set_text(text);
  r.mutable_stopping()->set_max_new_tokens(max_new_tokens);
  r.mutable_stopping()->set_ignore_eos(true);
  return r;
}

class TextServingTest : public ::testing::TestWithParam<std::string> {};

TEST_P(TextServingTest, TextRequestsEndToEnd) {
  const bool qwen2 = GetParam() == "tiny-qwen2";
  const std::string dir = WriteCheckpoint(GetParam(), DType::kBFloat16, 256 << 10);
  ASSERT_TRUE(fs::exists(fs::path(dir) / "model.safetensors.index.json"));
  auto server = StartTestServer(dir);
  ASSERT_NE(server, nullptr);
  Client& client = *server->client;
  auto info = client.GetModelInfo();
  ASSERT_TRUE(info.ok());
  EXPECT_TRUE(info->has_tokenizer());

  const std::string prompt = "The server streams tokens to every client, 12345 times. ";
  auto ids = client.Tokenize(prompt, /*add_special_tokens=*/true);
  ASSERT_TRUE(ids.ok()) << ids.status();
  if (qwen2) {
    EXPECT_NE(ids->front(), info->vocab_size() - 3);  // Qwen2 adds no BOS
  } else {
    EXPECT_EQ(ids->front(), info->bos_token_id());  // Llama-3 prepends <|begin_of_text|>
  }
  EXPECT_LT(ids->size(), prompt.size());  // merges apply: fewer tokens than bytes

  std::vector<std::string> deltas;
  StreamResult r = client.GenerateStream(TextRequest(prompt, 40), [&](const StreamChunk& c) {
    deltas.push_back(c.response.text());
  });
  ASSERT_TRUE(r.status.ok()) << r.status.error_message();
  EXPECT_EQ(r.response.usage().prompt_tokens(), ids->size());
  ASSERT_EQ(r.response.token_ids_size(), 40);
  std::vector<int32_t> out(r.response.token_ids().begin(), r.response.token_ids().end());
  auto decoded = client.Detokenize(out);
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(r.response.text(), *decoded);
  std::string joined;
  for (const std::string& d : deltas) joined += d;
  EXPECT_EQ(joined, *decoded);

  // A stop string made of the end of one token's text and the start of the
  // next: the stream stops with FINISH_REASON_STOP right before it.
  const std::string full = *decoded;
  std::string stop;
  size_t cut = std::string::npos;
  for (size_t i = 1; i + 1 < out.size() && stop.empty(); ++i) {
    auto before = client.Detokenize(std::vector<int32_t>(out.begin(), out.begin() + i));
    auto after = client.Detokenize(std::vector<int32_t>(out.begin(), out.begin() + i + 1));
    if (!before.ok() || !after.ok() || before->size() < 2 || after->size() < before->size() + 2) continue;
    // The last byte of token i-1's text and the first of token i's (ASCII only).
    const unsigned char a = (*before)[before->size() - 1], b = (*after)[before->size()];
    if (a >= 0x80 || b >= 0x80) continue;
    stop = before->substr(before->size() - 1) + after->substr(before->size(), 1);
    cut = full.find(stop);
  }
  ASSERT_FALSE(stop.empty()) << "no ASCII token boundary in: " << full;
  v1::GenerateRequest with_stop = TextRequest(prompt, 40);
  with_stop.mutable_stopping()->add_stop(stop);
  StreamResult s = client.GenerateStream(with_stop);
  ASSERT_TRUE(s.status.ok());
  EXPECT_EQ(s.response.finish_reason(), v1::FINISH_REASON_STOP);
  EXPECT_EQ(s.response.text(), full.substr(0, cut)) << "stop \"" << stop << "\"";
  EXPECT_EQ(server->Metric("kvserve_kv_blocks_used"), 0);
}

INSTANTIATE_TEST_SUITE_P(Presets, TextServingTest, ::testing::Values("tiny-qwen2", "tiny-llama3"));

TEST(TextServingLoadTest, TokenizerLargerThanTheVocabularyIsRefused) {
  const std::string dir = WriteCheckpoint("tiny-mistral", DType::kFloat32, 0);
  std::string config = *ReadTextFile(dir + "/config.json");
  const size_t at = config.find("\"vocab_size\": 600");
  ASSERT_NE(at, std::string::npos);
  config.replace(at, 17, "\"vocab_size\": 500");
  std::ofstream(dir + "/config.json") << config;
  auto source = OpenModelSource(dir);
  ASSERT_FALSE(source.ok());
  EXPECT_THAT(std::string(source.status().message()), ::testing::HasSubstr("vocab_size is 500"));
}

}  // namespace
}  // namespace kvserve::testing
