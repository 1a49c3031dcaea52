// OpenModelSource with and without a tokenizer.json beside the checkpoint.
#include <filesystem>
#include <fstream>

#include "engine/loading/model_loader.h"
#include "gtest/gtest.h"
#include "tests/hf_tokenizer_test_util.h"
#include "tests/test_paths.h"

namespace kvserve {
namespace {

namespace fs = std::filesystem;

// A model directory: the tiny-llama-gqa checkpoint (linked) plus `tokenizer_json`
// as tokenizer.json (none when empty). config.json declares a vocabulary of
// 1280 so that the 1200-id fixture tokenizer fits (OpenModelSource reads the
// config and the safetensors headers, not the weights).
fs::path MakeModelDir(const std::string& name, const std::string& tokenizer_json) {
  const fs::path dir = fs::path(::testing::TempDir()) / ("kvserve_model_loader_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const auto& entry : fs::directory_iterator(testing::FixtureDir("tiny-llama-gqa"))) {
    if (entry.path().filename() == "config.json") continue;
    fs::create_symlink(entry.path(), dir / entry.path().filename());
  }
  std::string config = testing::ReadFile(testing::FixtureDir("tiny-llama-gqa") + "/config.json");
  const std::string field = "\"vocab_size\": 320";
  config.replace(config.find(field), field.size(), "\"vocab_size\": 1280");
  std::ofstream(dir / "config.json") << config;
  if (!tokenizer_json.empty()) std::ofstream(dir / "tokenizer.json") << tokenizer_json;
  return dir;
}

TEST(ModelLoaderTest, LoadsTokenizerJson) {
  const std::string json = testing::ReadFile(
      testing::TokenizerFixtureDir("bytelevel-bpe") + "/tokenizer.json");
  auto source = OpenModelSource(MakeModelDir("with_tokenizer", json).string());
  ASSERT_TRUE(source.ok()) << source.status();
  ASSERT_NE(source->tokenizer, nullptr);
  // "Hello, world!" from cases.json, with the template's BOS.
  EXPECT_EQ(*source->tokenizer->Encode("Hello, world!", /*add_special_tokens=*/true),
            (std::vector<int32_t>{0, 42, 71, 78, 338, 14, 323, 271, 555, 3}));
}

TEST(ModelLoaderTest, MalformedTokenizerJsonIsAnError) {
  auto source = OpenModelSource(MakeModelDir("bad_tokenizer", R"({"model": {"type": "BPE"}})").string());
  ASSERT_FALSE(source.ok());
  EXPECT_EQ(source.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(source.status().message().find("bad_tokenizer/tokenizer.json: "), std::string::npos);
  EXPECT_NE(source.status().message().find("model.vocab: is missing"), std::string::npos)
      << source.status().message();
}

TEST(ModelLoaderTest, NoTokenizerJsonMeansNoTokenizer) {
  auto source = OpenModelSource(MakeModelDir("no_tokenizer", "").string());
  ASSERT_TRUE(source.ok()) << source.status();
  EXPECT_EQ(source->tokenizer, nullptr);
}

}  // namespace
}  // namespace kvserve
