// ChatTemplate's API around the interpreter: ApplyChatTemplate's variables,
// raise_exception as IsTemplateException, limits that turn hostile templates
// and inputs into errors instead of crashes, and concurrent renders of one
// parsed template from real threads.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "engine/text/chat_template/chat_template.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/test_paths.h"

namespace kvserve {
namespace {

using Json = nlohmann::ordered_json;

ChatTemplate MustParse(const std::string& source) {
  absl::StatusOr<ChatTemplate> tmpl = ChatTemplate::Parse(source);
  EXPECT_TRUE(tmpl.ok()) << tmpl.status();
  return *std::move(tmpl);
}

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::filesystem::path> TemplateFiles() {
  std::vector<std::filesystem::path> files;
  for (const auto& entry :
       std::filesystem::directory_iterator(testing::TestDataDir() + "/chat_templates")) {
    if (entry.path().extension() == ".jinja") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

Json Conversation() {
  return Json::parse(R"([
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Hi 👋"},
    {"role": "assistant", "content": "Hello."},
    {"role": "user", "content": "Weather?"}
  ])");
}

TEST(ApplyChatTemplateTest, PassesTransformersVariables) {
  ChatTemplate tmpl = MustParse(
      "{{ bos_token }}|{{ eos_token }}|{{ add_generation_prompt }}|{{ tools is defined }}|"
      "{{ messages | length }}|{{ extra_flag | default('none') }}");
  Json messages = Conversation();
  absl::StatusOr<std::string> out = ApplyChatTemplate(tmpl, messages, true, nullptr, "<s>", "</s>");
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, "<s>|</s>|True|False|4|none");

  // A null tools value is left out, as transformers does; an array is passed.
  Json null_tools = nullptr;
  out = ApplyChatTemplate(tmpl, messages, false, &null_tools, "", "");
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, "||False|False|4|none");
  Json tools = Json::parse(R"([{"type": "function", "function": {"name": "f"}}])");
  Json extra = {{"extra_flag", "on"}, {"bos_token", "[BOS]"}};
  out = ApplyChatTemplate(tmpl, messages, false, &tools, "<s>", "</s>", extra);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, "[BOS]|</s>|False|True|4|on");
}

TEST(ApplyChatTemplateTest, RejectedRoleIsTemplateException) {
  ChatTemplate tmpl = MustParse(ReadFile(testing::TestDataDir() + "/chat_templates/gemma.jinja"));
  absl::StatusOr<std::string> out =
      ApplyChatTemplate(tmpl, Conversation(), true, nullptr, "<bos>", "<eos>");
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(out.status().message(), "System role not supported");
  EXPECT_TRUE(IsTemplateException(out.status()));

  // Other render errors are not the template's exception.
  ChatTemplate broken = MustParse("{{ messages[0].content + 1 }}");
  out = ApplyChatTemplate(broken, Conversation(), true, nullptr, "", "");
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(IsTemplateException(out.status()));
}

TEST(ChatTemplateApiTest, ContextMustBeAnObject) {
  ChatTemplate tmpl = MustParse("x");
  absl::StatusOr<std::string> out = tmpl.Render(Json::array());
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("JSON object"), std::string_view::npos);
}

TEST(ChatTemplateApiTest, GenerationBlockRendersItsBody) {
  // transformers' {% generation %} marks assistant text for training masks.
  ChatTemplate tmpl = MustParse("a{% generation %}b{{ 1 }}{% endgeneration %}c");
  EXPECT_EQ(*tmpl.Render(Json::object()), "ab1c");
}

TEST(ChatTemplateApiTest, CopiesAndMovesShareTheParsedTemplate) {
  ChatTemplate tmpl = MustParse("{{ x }}!");
  ChatTemplate copy = tmpl;
  ChatTemplate moved = std::move(tmpl);
  EXPECT_EQ(*copy.Render({{"x", 1}}), "1!");
  EXPECT_EQ(*moved.Render({{"x", 2}}), "2!");
}

TEST(ChatTemplateLimitsTest, DeepNestingIsAnErrorNotACrash) {
  std::string parens = std::string(5000, '(') + "1" + std::string(5000, ')');
  absl::StatusOr<ChatTemplate> tmpl = ChatTemplate::Parse("{{ " + parens + " }}");
  ASSERT_FALSE(tmpl.ok());
  EXPECT_NE(tmpl.status().message().find("nest more than"), std::string_view::npos) << tmpl.status();

  std::string ifs;
  for (int i = 0; i < 3000; ++i) ifs += "{% if true %}";
  tmpl = ChatTemplate::Parse(ifs);
  ASSERT_FALSE(tmpl.ok());
  EXPECT_NE(tmpl.status().message().find("nest more than"), std::string_view::npos) << tmpl.status();

  // A list nested by a loop stops at the value nesting limit.
  ChatTemplate deep = MustParse(
      "{% set ns = namespace(x=[]) %}{% for i in range(10000) %}{% set ns.x = [ns.x] %}{% endfor %}"
      "{{ ns.x }}");
  absl::StatusOr<std::string> out = deep.Render(Json::object());
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("nest more than 256"), std::string_view::npos) << out.status();

  // So does deeply nested JSON from the caller.
  Json value = Json::array();
  for (int i = 0; i < 1000; ++i) value = Json::array({value});
  out = MustParse("{{ v }}").Render({{"v", value}});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("nest more than"), std::string_view::npos) << out.status();
}

TEST(ChatTemplateLimitsTest, ReferenceCyclesAndHugeValuesAreRefused) {
  absl::StatusOr<std::string> out =
      MustParse("{% set ns = namespace() %}{% set ns.self = ns %}").Render(Json::object());
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("ns.self"), std::string_view::npos) << out.status();

  out = MustParse("{{ 'x' * 1000000000 }}").Render(Json::object());
  ASSERT_FALSE(out.ok());
  out = MustParse("{{ range(100001) | length }}").Render(Json::object());
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("100000"), std::string_view::npos) << out.status();
  out = MustParse("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}").Render(Json::object());
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("recursion"), std::string_view::npos) << out.status();
  out = MustParse("{{ 9223372036854775807 + 1 }}").Render(Json::object());
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("overflow"), std::string_view::npos) << out.status();
}

TEST(ChatTemplateLimitsTest, EveryPrefixOfRealTemplatesParsesOrFailsCleanly) {
  // Truncated templates exercise every "unexpected end" path of the lexer and
  // parser; the ones that parse must render or fail without crashing.
  Json context = {{"messages", Conversation()}, {"add_generation_prompt", true},
                  {"bos_token", "<s>"}, {"eos_token", "</s>"}};
  int parsed = 0, failed = 0;
  for (const auto& path : TemplateFiles()) {
    std::string source = ReadFile(path);
    for (size_t n = 0; n <= source.size(); n += 5) {
      absl::StatusOr<ChatTemplate> tmpl = ChatTemplate::Parse(source.substr(0, n));
      if (!tmpl.ok()) {
        EXPECT_EQ(tmpl.status().code(), absl::StatusCode::kInvalidArgument);
        EXPECT_NE(tmpl.status().message().find("line "), std::string_view::npos) << tmpl.status();
        ++failed;
        continue;
      }
      ++parsed;
      absl::StatusOr<std::string> out = tmpl->Render(context);
      if (!out.ok()) EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
    }
  }
  EXPECT_GT(parsed, 0);
  EXPECT_GT(failed, 0);
}

TEST(ChatTemplateThreadsTest, OneTemplateRendersOnManyThreads) {
  ChatTemplate tmpl = MustParse(ReadFile(testing::TestDataDir() + "/chat_templates/qwen2.5.jinja"));
  Json messages = Conversation();
  absl::StatusOr<std::string> expected = ApplyChatTemplate(tmpl, messages, true, nullptr, "", "");
  ASSERT_TRUE(expected.ok()) << expected.status();
  std::vector<std::thread> threads;
  std::vector<int> mismatches(8, 0);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        absl::StatusOr<std::string> out = ApplyChatTemplate(tmpl, messages, true, nullptr, "", "");
        if (!out.ok() || *out != *expected) ++mismatches[t];
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < 8; ++t) EXPECT_EQ(mismatches[t], 0) << "thread " << t;
}

}  // namespace
}  // namespace kvserve
