// Where a checkpoint's chat template comes from: tokenizer_config.json (a
// string, or a list of named templates), chat_template.jinja (which wins),
// and the bos/eos strings the template sees.
#include "engine/loading/chat_template_file.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kvserve {
namespace {

namespace fs = std::filesystem;

class ChatTemplateFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("kvserve_tmpl_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
  }
  fs::path dir_;
};

TEST_F(ChatTemplateFileTest, NoTemplateIsNotAnError) {
  auto source = ReadChatTemplate(dir_.string());
  ASSERT_TRUE(source.ok()) << source.status();
  EXPECT_FALSE(source->has_value());
  Write("tokenizer_config.json", R"({"bos_token": "<s>"})");
  source = ReadChatTemplate(dir_.string());
  ASSERT_TRUE(source.ok()) << source.status();
  EXPECT_FALSE(source->has_value());
}

TEST_F(ChatTemplateFileTest, StringTemplateWithAddedTokenObjects) {
  Write("tokenizer_config.json",
        R"({"chat_template": "{{ bos_token }}hi", "bos_token": {"content": "<s>", "lstrip": false},
            "eos_token": "</s>"})");
  auto source = ReadChatTemplate(dir_.string());
  ASSERT_TRUE(source.ok()) << source.status();
  ASSERT_TRUE(source->has_value());
  EXPECT_EQ((*source)->text, "{{ bos_token }}hi");
  EXPECT_EQ((*source)->origin, "tokenizer_config.json");
  EXPECT_EQ((*source)->bos_token, "<s>");
  EXPECT_EQ((*source)->eos_token, "</s>");
}

TEST_F(ChatTemplateFileTest, NamedTemplatesUseDefault) {
  Write("tokenizer_config.json",
        R"({"chat_template": [{"name": "tool_use", "template": "T"},
                              {"name": "default", "template": "D"}]})");
  auto source = ReadChatTemplate(dir_.string());
  ASSERT_TRUE(source.ok()) << source.status();
  EXPECT_EQ((*source)->text, "D");
}

TEST_F(ChatTemplateFileTest, NamedTemplatesWithoutDefaultAreRefused) {
  Write("tokenizer_config.json", R"({"chat_template": [{"name": "tool_use", "template": "T"}]})");
  auto source = ReadChatTemplate(dir_.string());
  EXPECT_EQ(source.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(source.status().message(), ::testing::HasSubstr("default"));
}

TEST_F(ChatTemplateFileTest, JinjaFileWinsAndKeepsTheConfigsTokens) {
  Write("tokenizer_config.json", R"({"chat_template": "old", "eos_token": "<|im_end|>"})");
  Write("chat_template.jinja", "new {{ eos_token }}");
  auto source = ReadChatTemplate(dir_.string());
  ASSERT_TRUE(source.ok()) << source.status();
  EXPECT_EQ((*source)->text, "new {{ eos_token }}");
  EXPECT_EQ((*source)->origin, "chat_template.jinja");
  EXPECT_EQ((*source)->eos_token, "<|im_end|>");
}

TEST_F(ChatTemplateFileTest, MalformedConfigsAreRefusedByField) {
  Write("tokenizer_config.json", R"({"chat_template": 42})");
  auto source = ReadChatTemplate(dir_.string());
  EXPECT_THAT(source.status().message(), ::testing::HasSubstr("chat_template"));
  Write("tokenizer_config.json", R"({"chat_template": "x", "eos_token": 7})");
  source = ReadChatTemplate(dir_.string());
  EXPECT_THAT(source.status().message(), ::testing::HasSubstr("eos_token"));
  Write("tokenizer_config.json", "{not json");
  source = ReadChatTemplate(dir_.string());
  EXPECT_THAT(source.status().message(), ::testing::HasSubstr("tokenizer_config.json"));
}

TEST_F(ChatTemplateFileTest, FlagFileErrorsNameTheFlag) {
  auto text = ReadChatTemplateFile((dir_ / "missing.jinja").string());
  EXPECT_EQ(text.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(text.status().message(), ::testing::HasSubstr("--chat_template"));
  Write("t.jinja", "{{ x }}");
  text = ReadChatTemplateFile((dir_ / "t.jinja").string());
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "{{ x }}");
}

}  // namespace
}  // namespace kvserve
