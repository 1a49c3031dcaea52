// The chat API over real gRPC on loopback: ApplyChatTemplate, Chat and
// ChatStream on the tiny Qwen2 fixture with a strict ChatML template
// (tests/data/chat/chatml_strict.jinja) placed next to the model as
// chat_template.jinja, so the template comes through the real loader.
#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/server_test_util.h"
#include "tests/test_paths.h"

namespace kvserve::testing {
namespace {

namespace fs = std::filesystem;

constexpr int32_t kImStart = 998;
constexpr int32_t kImEnd = 999;  // end of turn; the model's EOS is 997

// A copy of the tiny-qwen2 fixture plus `extra` files, in a fresh temp dir.
std::string ModelDirWith(const std::string& name,
                         const std::vector<std::pair<std::string, std::string>>& extra) {
  const fs::path dir = fs::temp_directory_path() / ("kvserve_chat_" + name + "_" +
                                                   std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const auto& entry : fs::directory_iterator(FixtureDir("tiny-qwen2"))) {
    fs::copy(entry.path(), dir / entry.path().filename());
  }
  for (const auto& [file, text] : extra) std::ofstream(dir / file) << text;
  return dir.string();
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void AddMessage(google::protobuf::RepeatedPtrField<v1::ChatMessage>* messages,
                const std::string& role, const std::string& content) {
  v1::ChatMessage* m = messages->Add();
  m->set_role(role);
  m->set_content(content);
}

class ChatApiTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    model_dir_ = new std::string(ModelDirWith(
        "chatml", {{"chat_template.jinja", ReadFile(TestDataDir() + "/chat/chatml_strict.jinja")}}));
  }
  static void TearDownTestSuite() {
    fs::remove_all(*model_dir_);
    delete model_dir_;
  }
  void SetUp() override {
    server_ = StartTestServer(*model_dir_);
    ASSERT_NE(server_, nullptr);
  }
  void TearDown() override {
    if (server_) EXPECT_EQ(server_->Metric("kvserve_kv_blocks_used"), 0);
  }

  static std::string* model_dir_;
  std::unique_ptr<TestServer> server_;
};
std::string* ChatApiTest::model_dir_ = nullptr;

TEST_F(ChatApiTest, RendersTheConversationAndEncodesItWithoutAddingSpecialTokens) {
  v1::ApplyChatTemplateRequest request;
  AddMessage(request.mutable_messages(), "system", "You are terse.");
  AddMessage(request.mutable_messages(), "user", "Hi");
  auto response = server_->client->ApplyChatTemplate(request);
  ASSERT_TRUE(response.ok()) << response.status();
  // What Python jinja2 renders for this template and conversation.
  EXPECT_EQ(response->text(),
            "<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\n");
  auto ids = server_->client->Tokenize(response->text(), /*add_special_tokens=*/false);
  ASSERT_TRUE(ids.ok()) << ids.status();
  EXPECT_THAT(std::vector<int32_t>(response->token_ids().begin(), response->token_ids().end()),
              ::testing::ElementsAreArray(*ids));
  EXPECT_EQ(response->token_ids(0), kImStart);

  request.set_add_generation_prompt(false);
  response = server_->client->ApplyChatTemplate(request);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->text(),
            "<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n");
}

TEST_F(ChatApiTest, ToolsReachTheTemplate) {
  v1::ApplyChatTemplateRequest request;
  AddMessage(request.mutable_messages(), "system", "S");
  AddMessage(request.mutable_messages(), "user", "What time is it?");
  request.set_tools_json(R"([{"type": "function", "function": {"name": "get_time", "parameters": {}}}])");
  request.set_add_generation_prompt(false);
  auto response = server_->client->ApplyChatTemplate(request);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->text(),
            "<|im_start|>system\nS\n\nTools: [{\"type\": \"function\", \"function\": {\"name\": "
            "\"get_time\", \"parameters\": {}}}]<|im_end|>\n<|im_start|>user\nWhat time is "
            "it?<|im_end|>\n");

  request.set_tools_json("{\"not\": \"a list\"}");
  response = server_->client->ApplyChatTemplate(request);
  EXPECT_EQ(response.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(response.status().message(), ::testing::HasSubstr("tools_json"));
}

TEST_F(ChatApiTest, ChatGeneratesLikeTheRenderedPromptAndStopsAtTheEndOfTurn) {
  v1::ChatRequest chat;
  AddMessage(chat.mutable_messages(), "user", "Hello there");
  chat.mutable_stopping()->set_max_new_tokens(12);
  auto answer = server_->client->Chat(chat);
  ASSERT_TRUE(answer.ok()) << answer.status();

  v1::ApplyChatTemplateRequest render;
  *render.mutable_messages() = chat.messages();
  auto prompt = server_->client->ApplyChatTemplate(render);
  ASSERT_TRUE(prompt.ok()) << prompt.status();
  v1::GenerateRequest generate;
  *generate.mutable_token_ids()->mutable_ids() = prompt->token_ids();
  generate.mutable_stopping()->set_max_new_tokens(12);
  generate.mutable_stopping()->add_stop_token_ids(kImEnd);
  auto expected = server_->client->Generate(generate);
  ASSERT_TRUE(expected.ok()) << expected.status();

  EXPECT_THAT(std::vector<int32_t>(answer->token_ids().begin(), answer->token_ids().end()),
              ::testing::ElementsAreArray(expected->token_ids()));
  EXPECT_EQ(answer->text(), expected->text());
  EXPECT_EQ(answer->finish_reason(), expected->finish_reason());
  EXPECT_EQ(answer->usage().prompt_tokens(), static_cast<uint32_t>(prompt->token_ids_size()));

  StreamResult streamed = server_->client->ChatStream(chat);
  ASSERT_TRUE(streamed.status.ok()) << streamed.status.error_message();
  EXPECT_THAT(std::vector<int32_t>(streamed.response.token_ids().begin(),
                                   streamed.response.token_ids().end()),
              ::testing::ElementsAreArray(answer->token_ids()));
  EXPECT_EQ(server_->chat.formatter->end_of_turn_token_ids(), std::vector<int32_t>{kImEnd});
}

TEST_F(ChatApiTest, EndOfTurnTokenIsAddedToTheCallersStopTokens) {
  v1::ChatRequest chat;
  AddMessage(chat.mutable_messages(), "user", "x");
  chat.mutable_stopping()->add_stop_token_ids(5);
  const ChatPrompt prompt{"p", {1, 2}};
  v1::GenerateRequest request = ToGenerateRequest(chat, prompt, *server_->chat.formatter);
  EXPECT_THAT(request.stopping().stop_token_ids(), ::testing::ElementsAre(5, kImEnd));
  EXPECT_THAT(request.token_ids().ids(), ::testing::ElementsAre(1, 2));
}

TEST_F(ChatApiTest, BadConversationsAreRefusedByName) {
  v1::ChatRequest chat;
  auto empty = server_->client->Chat(chat);
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(empty.status().message(), ::testing::HasSubstr("messages"));

  AddMessage(chat.mutable_messages(), "", "no role");
  auto no_role = server_->client->Chat(chat);
  EXPECT_EQ(no_role.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(no_role.status().message(), ::testing::HasSubstr("messages[0].role"));

  // The template's own raise_exception message, unary and streamed.
  chat.clear_messages();
  AddMessage(chat.mutable_messages(), "robot", "beep");
  auto rejected = server_->client->Chat(chat);
  EXPECT_EQ(rejected.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(rejected.status().message(), ::testing::HasSubstr("Unknown role: robot"));
  StreamResult streamed = server_->client->ChatStream(chat);
  EXPECT_EQ(streamed.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(streamed.status.error_message(), ::testing::HasSubstr("Unknown role: robot"));

  // Too long for the context: the engine's own limit, named.
  chat.clear_messages();
  AddMessage(chat.mutable_messages(), "user", std::string(5000, 'a'));
  auto too_long = server_->client->Chat(chat);
  EXPECT_EQ(too_long.status().code(), absl::StatusCode::kInvalidArgument);
}

constexpr char kWeatherTool[] =
    R"([{"type": "function", "function": {"name": "get_weather", "parameters": )"
    R"({"type": "object", "properties": {"city": {"type": "string"}}}}}])";

// tool_choice naming a function: the output is that call's arguments (the
// constraint is its parameters schema), in tool_calls and not in text, unary
// and streamed alike; the reply's tokens are what the request generated.
TEST_F(ChatApiTest, NamedToolChoiceReturnsOneCallOverChatAndChatStream) {
  v1::ChatRequest chat;
  AddMessage(chat.mutable_messages(), "user", "Weather in Paris?");
  chat.set_tools_json(kWeatherTool);
  chat.mutable_tool_choice()->set_function_name("get_weather");
  chat.mutable_stopping()->set_max_new_tokens(6);
  auto answer = server_->client->Chat(chat);
  if (answer.status().code() == absl::StatusCode::kUnimplemented) {
    GTEST_SKIP() << "the JSON Schema constraint is not in this build yet: " << answer.status();
  }
  ASSERT_TRUE(answer.ok()) << answer.status();
  ASSERT_EQ(answer->tool_calls_size(), 1);
  EXPECT_EQ(answer->tool_calls(0).name(), "get_weather");
  EXPECT_THAT(answer->tool_calls(0).id(), ::testing::MatchesRegex("call_[0-9A-Za-z]{24}"));
  EXPECT_EQ(answer->text(), "");  // all of it is the call's arguments
  EXPECT_GT(answer->token_ids_size(), 0);
  // The random model runs into max_new_tokens: "length" says the call may be cut.
  if (answer->finish_reason() != v1::FINISH_REASON_LENGTH) {
    EXPECT_EQ(answer->finish_reason(), v1::FINISH_REASON_TOOL_CALLS);
  }

  StreamResult streamed = server_->client->ChatStream(chat);
  ASSERT_TRUE(streamed.status.ok()) << streamed.status.error_message();
  ASSERT_EQ(streamed.response.tool_calls_size(), 1);
  EXPECT_EQ(streamed.response.tool_calls(0).name(), "get_weather");
  EXPECT_EQ(streamed.response.tool_calls(0).arguments(), answer->tool_calls(0).arguments());
  EXPECT_EQ(streamed.response.text(), "");
}

TEST_F(ChatApiTest, BadToolsAndToolChoicesAreRefusedByName) {
  struct Case {
    std::string tools_json;
    std::function<void(v1::ChatRequest&)> choose;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {R"([{"type": "function", "function": {"name": "has space"}}])", nullptr,
       "tools_json[0].function.name must be 1 to 64 characters"},
      {R"([{"type": "retrieval"}])", nullptr, "tools_json[0].type must be \"function\""},
      {R"([{"type": "function", "function": {"name": "f", "parameters": []}}])", nullptr,
       "tools_json[0].function.parameters must be a JSON Schema object"},
      {R"([{"type": "function", "function": {"name": "f"}},
           {"type": "function", "function": {"name": "f"}}])",
       nullptr, "tools_json[1].function.name \"f\" is defined twice"},
      {kWeatherTool, [](v1::ChatRequest& c) { c.mutable_tool_choice()->set_mode("always"); },
       "tool_choice must be"},
      {kWeatherTool,
       [](v1::ChatRequest& c) { c.mutable_tool_choice()->set_function_name("get_time"); },
       "tool_choice names the function \"get_time\""},
      {"", [](v1::ChatRequest& c) { c.mutable_tool_choice()->set_mode("required"); },
       "tool_choice needs tools"},
      {kWeatherTool,
       [](v1::ChatRequest& c) {
         c.mutable_tool_choice()->set_mode("required");
         c.mutable_sampling()->set_regex("a+");
       },
       "cannot be combined with a constraint"},
  };
  for (const Case& c : cases) {
    v1::ChatRequest chat;
    AddMessage(chat.mutable_messages(), "user", "x");
    chat.set_tools_json(c.tools_json);
    if (c.choose) c.choose(chat);
    auto unary = server_->client->Chat(chat);
    EXPECT_EQ(unary.status().code(), absl::StatusCode::kInvalidArgument) << c.expected;
    EXPECT_THAT(unary.status().message(), ::testing::HasSubstr(c.expected));
    StreamResult streamed = server_->client->ChatStream(chat);
    EXPECT_EQ(streamed.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << c.expected;
  }
}

// Qwen2.5's template: tool calls in the hermes format. A grammar makes the
// random model write a sentence and a call, which tool_choice "auto" (the
// default with tools) parses into tool_calls, unary and streamed.
class HermesToolCallTest : public ::testing::Test {
 protected:
  void SetUp() override {
    model_dir_ = ModelDirWith(
        "qwen25",
        {{"chat_template.jinja", ReadFile(TestDataDir() + "/chat_templates/qwen2.5.jinja")}});
    server_ = StartTestServer(model_dir_);
    ASSERT_NE(server_, nullptr);
  }
  void TearDown() override {
    if (server_) EXPECT_EQ(server_->Metric("kvserve_kv_blocks_used"), 0);
    server_.reset();
    fs::remove_all(model_dir_);
  }
  std::string model_dir_;
  std::unique_ptr<TestServer> server_;
};

TEST_F(HermesToolCallTest, AutoParsesTheCallsOutOfTheText) {
  EXPECT_EQ(server_->chat.access.tool_call_format, tool_calls::ToolCallFormat::kHermes);
  v1::ChatRequest chat;
  AddMessage(chat.mutable_messages(), "user", "Weather in Paris?");
  chat.set_tools_json(kWeatherTool);
  chat.mutable_sampling()->set_grammar(
      R"(root ::= "Checking.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": )"
      R"({\"city\": \"Paris\"}}\n</tool_call>")");
  chat.mutable_stopping()->set_max_new_tokens(200);
  auto answer = server_->client->Chat(chat);
  if (answer.status().code() == absl::StatusCode::kUnimplemented) {
    GTEST_SKIP() << "grammar constraints are not in this build yet: " << answer.status();
  }
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_EQ(answer->text(), "Checking.\n");  // the content, streamed up to the marker
  ASSERT_EQ(answer->tool_calls_size(), 1);
  EXPECT_EQ(answer->tool_calls(0).name(), "get_weather");
  EXPECT_EQ(answer->tool_calls(0).arguments(), R"({"city":"Paris"})");
  EXPECT_EQ(answer->finish_reason(), v1::FINISH_REASON_TOOL_CALLS);

  StreamResult streamed = server_->client->ChatStream(chat);
  ASSERT_TRUE(streamed.status.ok()) << streamed.status.error_message();
  EXPECT_EQ(streamed.response.text(), answer->text());
  ASSERT_EQ(streamed.response.tool_calls_size(), 1);
  EXPECT_EQ(streamed.response.tool_calls(0).arguments(), answer->tool_calls(0).arguments());
  EXPECT_NE(streamed.response.tool_calls(0).id(), answer->tool_calls(0).id());
  EXPECT_EQ(streamed.response.finish_reason(), v1::FINISH_REASON_TOOL_CALLS);

  // tool_choice "none": no tools shown, the text comes back as it is.
  chat.mutable_tool_choice()->set_mode("none");
  auto plain = server_->client->Chat(chat);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->tool_calls_size(), 0);
  EXPECT_THAT(plain->text(), ::testing::HasSubstr("<tool_call>"));
  EXPECT_NE(plain->finish_reason(), v1::FINISH_REASON_TOOL_CALLS);
}

TEST(ChatWithoutTemplateTest, ChatIsAFailedPreconditionAndGenerateStillWorks) {
  auto server = StartTestServer(FixtureDir("tiny-qwen2"));
  ASSERT_NE(server, nullptr);
  v1::ChatRequest chat;
  AddMessage(chat.mutable_messages(), "user", "Hi");
  EXPECT_EQ(server->client->Chat(chat).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(server->client->ChatStream(chat).status.error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  v1::ApplyChatTemplateRequest render;
  *render.mutable_messages() = chat.messages();
  auto rendered = server->client->ApplyChatTemplate(render);
  EXPECT_EQ(rendered.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(rendered.status().message(), ::testing::HasSubstr("no chat template"));
  EXPECT_TRUE(server->client->Generate(TokenRequest({1, 2, 3}, 4)).ok());
}

TEST(ChatWithoutTemplateTest, ATemplateThatDoesNotParseDisablesChatOnly) {
  const std::string dir = ModelDirWith("broken", {{"chat_template.jinja", "{% for m in %}"}});
  {
    auto server = StartTestServer(dir);
    ASSERT_NE(server, nullptr);
    v1::ApplyChatTemplateRequest render;
    AddMessage(render.mutable_messages(), "user", "Hi");
    auto rendered = server->client->ApplyChatTemplate(render);
    EXPECT_EQ(rendered.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(rendered.status().message(), ::testing::HasSubstr("chat_template.jinja"));
    EXPECT_TRUE(server->client->Generate(TokenRequest({1, 2, 3}, 4)).ok());
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kvserve::testing
