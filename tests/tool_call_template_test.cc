// A conversation with an assistant's tool calls and the tools' results,
// rendered by the real templates (tests/data/chat_templates) through the
// server's chat mapping: each template writes the call the way its model was
// trained on (arguments as an object, not a quoted string) and the result in
// its own markers.
#include <fstream>
#include <sstream>

#include "engine/text/byte_tokenizer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/chat_mapping.h"
#include "tests/test_paths.h"

namespace kvserve {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class ToolCallTemplateTest : public ::testing::Test {
 protected:
  absl::StatusOr<std::string> Render(const std::string& file, const std::string& tools_json,
                                     tool_calls::ToolCallFormat format) {
    std::ifstream in(testing::TestDataDir() + "/chat_templates/" + file);
    std::stringstream ss;
    ss << in.rdbuf();
    ChatTemplateSource source;
    source.text = ss.str();
    source.origin = file;
    source.bos_token = "<s>";
    source.eos_token = "</s>";
    auto formatter = ChatFormatter::Create(source, tokenizer_, {}, std::nullopt);
    if (!formatter.ok()) return formatter.status();
    ChatAccess access{formatter->get(), "", format};
    absl::StatusOr<ChatPrompt> prompt = RenderChat(access, messages_, tools_json, true);
    if (!prompt.ok()) return prompt.status();
    return prompt->text;
  }

  void SetUp() override {
    v1::ChatMessage* user = messages_.Add();
    user->set_role("user");
    user->set_content("Weather in Paris?");
    v1::ChatMessage* assistant = messages_.Add();
    assistant->set_role("assistant");  // content empty: only a call
    v1::ToolCall* call = assistant->add_tool_calls();
    call->set_id("call_abcdefghijklmnopqrstuvwx");
    call->set_name("get_weather");
    call->set_arguments(R"({"city": "Paris"})");
    v1::ChatMessage* tool = messages_.Add();
    tool->set_role("tool");
    tool->set_tool_call_id("call_abcdefghijklmnopqrstuvwx");
    tool->set_name("get_weather");
    tool->set_content("sunny, 21 C");
  }

  ByteTokenizer tokenizer_{300};
  google::protobuf::RepeatedPtrField<v1::ChatMessage> messages_;
  const std::string tools_ =
      R"([{"type": "function", "function": {"name": "get_weather", "description": "Weather now",)"
      R"( "parameters": {"type": "object", "properties": {"city": {"type": "string",)"
      R"( "description": "City"}}, "required": ["city"]}}}])";
};

TEST_F(ToolCallTemplateTest, Llama31) {
  absl::StatusOr<std::string> text =
      Render("llama3.1.jinja", tools_, tool_calls::ToolCallFormat::kLlama3Json);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_THAT(*text, HasSubstr("<|start_header_id|>assistant<|end_header_id|>\n\n"
                               R"({"name": "get_weather", "parameters": {"city": "Paris"}})"
                               "<|eot_id|>"));
  // Jinja's strings are iterable, so the template writes a string result
  // through tojson (quoted), as transformers renders it too.
  EXPECT_THAT(*text, HasSubstr("<|start_header_id|>ipython<|end_header_id|>\n\n\"sunny, 21 C\""
                               "<|eot_id|>"));
  EXPECT_THAT(*text, HasSubstr("\"name\": \"get_weather\""));  // the tool's definition
  EXPECT_THAT(*text, HasSubstr("Environment: ipython"));
}

TEST_F(ToolCallTemplateTest, Llama32) {
  absl::StatusOr<std::string> text =
      Render("llama3.2.jinja", tools_, tool_calls::ToolCallFormat::kLlama3Json);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_THAT(*text, HasSubstr(R"({"name": "get_weather", "parameters": {"city": "Paris"}})"));
  EXPECT_THAT(*text, HasSubstr("<|start_header_id|>ipython<|end_header_id|>\n\n\"sunny, 21 C\""));
}

TEST_F(ToolCallTemplateTest, Qwen25) {
  absl::StatusOr<std::string> text =
      Render("qwen2.5.jinja", tools_, tool_calls::ToolCallFormat::kHermes);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_THAT(*text, HasSubstr("<|im_start|>assistant\n<tool_call>\n"
                               R"({"name": "get_weather", "arguments": {"city": "Paris"}})"
                               "\n</tool_call><|im_end|>"));
  EXPECT_THAT(*text, HasSubstr("<|im_start|>user\n<tool_response>\nsunny, 21 C\n</tool_response>"
                               "<|im_end|>"));
  EXPECT_THAT(*text, Not(HasSubstr("\\\"city\\\"")));  // never a quoted string
}

TEST_F(ToolCallTemplateTest, Hermes2Pro) {
  absl::StatusOr<std::string> text =
      Render("hermes2-pro-tool-use.jinja", tools_, tool_calls::ToolCallFormat::kHermes);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_THAT(*text, HasSubstr("<|im_start|>assistant\n<tool_call>\n"
                               R"({"name": "get_weather", "arguments": {"city": "Paris"}})"
                               "\n</tool_call><|im_end|>"));
  EXPECT_THAT(*text, HasSubstr("<|im_start|>tool\n<tool_response>\nsunny, 21 C\n</tool_response>"));
}

TEST_F(ToolCallTemplateTest, MistralV03CutsIdsToNineCharacters) {
  absl::StatusOr<std::string> text =
      Render("mistral-v0.3.jinja", tools_, tool_calls::ToolCallFormat::kMistral);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_THAT(*text, HasSubstr(R"([TOOL_CALLS] [{"name": "get_weather", "arguments": )"
                               R"({"city": "Paris"}, "id": "pqrstuvwx"}]</s>)"));
  EXPECT_THAT(*text, HasSubstr(R"([TOOL_RESULTS] {"content": sunny, 21 C, "call_id": )"
                               R"("pqrstuvwx"}[/TOOL_RESULTS])"));
  EXPECT_THAT(*text, HasSubstr("[AVAILABLE_TOOLS]"));
}

TEST_F(ToolCallTemplateTest, MalformedArgumentsNameTheField) {
  messages_[1].mutable_tool_calls(0)->set_arguments("{\"city\": ");
  absl::StatusOr<std::string> text =
      Render("qwen2.5.jinja", tools_, tool_calls::ToolCallFormat::kHermes);
  EXPECT_EQ(text.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(text.status().message()),
              HasSubstr("messages[1].tool_calls[0].arguments"));
}

}  // namespace
}  // namespace kvserve
