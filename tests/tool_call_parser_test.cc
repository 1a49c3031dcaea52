// The tool-call parsers on outputs as the three model families write them
// (the formats their real templates in tests/data/chat_templates teach), and
// the streamer that turns a streamed output into OpenAI's deltas: the calls
// (name, arguments as a JSON string), the content around them, malformed
// calls left as content, and ids of OpenAI's shape.
#include "server/tool_calls/tool_call_parser.h"

#include <fstream>
#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "server/tool_calls/tool_call_streamer.h"
#include "tests/test_paths.h"

namespace kvserve::tool_calls {
namespace {

using ::testing::ElementsAre;
using ::testing::MatchesRegex;

std::string ReadTemplate(const std::string& name) {
  std::ifstream in(testing::TestDataDir() + "/chat_templates/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_FALSE(ss.str().empty()) << name;
  return ss.str();
}

// Ids numbered in order, so that whole results compare exactly.
std::function<std::string()> CountingIds() {
  auto n = std::make_shared<int>(0);
  return [n] { return "call_" + std::to_string((*n)++); };
}

ToolCallOutput Whole(ToolCallFormat format, std::string_view text) {
  return ParseWholeOutput({ToolCallMode::kParse, format, ""}, text, CountingIds());
}

// Streams `text` in pieces of `step` bytes and reassembles what a client
// would: content, and each call's id, name and arguments.
ToolCallOutput Streamed(const ToolCallPlan& plan, std::string_view text, size_t step) {
  ToolCallStreamer streamer(plan, CountingIds());
  ToolCallOutput out;
  std::string content;
  auto take = [&](const StreamDelta& d) {
    content += d.content;
    for (const CallDelta& c : d.calls) {
      if (c.first) {
        EXPECT_EQ(c.index, static_cast<int>(out.calls.size()));
        out.calls.push_back({c.id, c.name, ""});
      }
      out.calls.at(c.index).arguments += c.arguments;
    }
  };
  for (size_t i = 0; i < text.size(); i += step) take(streamer.Add(text.substr(i, step)));
  take(streamer.Finish());
  if (!content.empty()) out.content = content;
  return out;
}

ToolCall Call(int id, std::string name, std::string arguments) {
  return {"call_" + std::to_string(id), std::move(name), std::move(arguments)};
}

TEST(ToolCallFormatTest, DetectedFromTheRealTemplates) {
  EXPECT_EQ(DetectToolCallFormat(ReadTemplate("llama3.1.jinja")), ToolCallFormat::kLlama3Json);
  EXPECT_EQ(DetectToolCallFormat(ReadTemplate("llama3.2.jinja")), ToolCallFormat::kLlama3Json);
  EXPECT_EQ(DetectToolCallFormat(ReadTemplate("hermes2-pro-tool-use.jinja")),
            ToolCallFormat::kHermes);
  EXPECT_EQ(DetectToolCallFormat(ReadTemplate("qwen2.5.jinja")), ToolCallFormat::kHermes);
  EXPECT_EQ(DetectToolCallFormat(ReadTemplate("qwen3.jinja")), ToolCallFormat::kHermes);
  EXPECT_EQ(DetectToolCallFormat(ReadTemplate("mistral-v0.3.jinja")), ToolCallFormat::kMistral);
  for (const char* name : {"chatml.jinja", "smollm2.jinja", "llama2.jinja", "gemma.jinja",
                           "mistral-v0.1.jinja", "zephyr.jinja"}) {
    EXPECT_EQ(DetectToolCallFormat(ReadTemplate(name)), ToolCallFormat::kNone) << name;
  }
  EXPECT_EQ(*ToolCallFormatFromName("hermes"), ToolCallFormat::kHermes);
  EXPECT_FALSE(ToolCallFormatFromName("auto").ok());
  EXPECT_THAT(std::string(ToolCallFormatFromName("xml").status().message()),
              ::testing::HasSubstr("llama3_json, hermes, mistral"));
}

TEST(ToolCallIdTest, OpenAiShapeAndUnique) {
  const std::string a = NewToolCallId(), b = NewToolCallId();
  EXPECT_THAT(a, MatchesRegex("call_[0-9A-Za-z]{24}"));
  EXPECT_NE(a, b);
}

TEST(Llama3JsonTest, OneCallWithAndWithoutPythonTag) {
  const ToolCallOutput expected{std::nullopt,
                                {Call(0, "get_weather", R"({"city":"Paris","unit":"celsius"})")}};
  for (const char* text :
       {R"({"name": "get_weather", "parameters": {"city": "Paris", "unit": "celsius"}})",
        "<|python_tag|>{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\", "
        "\"unit\": \"celsius\"}}",
        "\n {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": "
        "\"celsius\"}}\n"}) {
    ToolCallOutput out = Whole(ToolCallFormat::kLlama3Json, text);
    EXPECT_EQ(out.content, expected.content) << text;
    EXPECT_EQ(out.calls, expected.calls) << text;
  }
}

TEST(Llama3JsonTest, SeveralSeparatedBySemicolonsAndNestedArguments) {
  const std::string text =
      R"({"name": "a", "parameters": {"q": "}{\"", "n": {"deep": [1, {"x": 2}]}}}; )"
      R"({"name": "b", "parameters": {}})";
  ToolCallOutput out = Whole(ToolCallFormat::kLlama3Json, text);
  EXPECT_EQ(out.content, std::nullopt);
  EXPECT_THAT(out.calls, ElementsAre(Call(0, "a", R"({"q":"}{\"","n":{"deep":[1,{"x":2}]}})"),
                                     Call(1, "b", "{}")));
}

TEST(Llama3JsonTest, ProseAndMalformedCallsAreContent) {
  for (const char* text :
       {"The weather in Paris is sunny.", R"(Sure: {"name": "a", "parameters": {}})",
        R"({"name": "a", "parameters": {"x": 1})",  // unclosed
        R"({"parameters": {"x": 1}})",              // no name
        R"({"name": "a", "parameters": [1]})",      // not an object
        R"({"name": "a", "parameters": {}} and more)"}) {
    ToolCallOutput out = Whole(ToolCallFormat::kLlama3Json, text);
    EXPECT_EQ(out.content, text);
    EXPECT_TRUE(out.calls.empty()) << text;
  }
}

// What Qwen2.5-7B-Instruct writes for two calls after a sentence.
constexpr char kHermesTwoCalls[] =
    "Let me check both cities.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
    "{\"city\": \"Paris\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_weather\", "
    "\"arguments\": {\"city\": \"Tōkyō\"}}\n</tool_call>";

TEST(HermesTest, CallsAndTheTextBeforeThem) {
  ToolCallOutput out = Whole(ToolCallFormat::kHermes, kHermesTwoCalls);
  EXPECT_EQ(out.content, "Let me check both cities.");
  EXPECT_THAT(out.calls, ElementsAre(Call(0, "get_weather", R"({"city":"Paris"})"),
                                     Call(1, "get_weather", R"({"city":"Tōkyō"})")));
  out = Whole(ToolCallFormat::kHermes,
              "<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>");
  EXPECT_EQ(out.content, std::nullopt);
  EXPECT_THAT(out.calls, ElementsAre(Call(0, "now", "{}")));
}

TEST(HermesTest, UnclosedLastCallIsTakenWhenItsJsonIsWhole) {
  ToolCallOutput out =
      Whole(ToolCallFormat::kHermes,
            "<tool_call>\n{\"name\": \"now\", \"arguments\": {\"tz\": \"UTC\"}}\n");
  EXPECT_THAT(out.calls, ElementsAre(Call(0, "now", R"({"tz":"UTC"})")));
}

TEST(HermesTest, MalformedCallsAreContent) {
  for (const char* text :
       {"<tool_call>\n{\"name\": \"now\", \"arguments\": {\n</tool_call>",
        "<tool_call>\nnot json\n</tool_call>", "<tool_call>\n{\"name\": \"now\", \"arguments\": {}",
        "no calls at all, <tool_call is not a marker"}) {
    ToolCallOutput out = Whole(ToolCallFormat::kHermes, text);
    EXPECT_EQ(out.content, text);
    EXPECT_TRUE(out.calls.empty()) << text;
  }
}

TEST(MistralTest, ArrayForm) {
  ToolCallOutput out =
      Whole(ToolCallFormat::kMistral,
            R"([TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Paris"}}, )"
            R"({"name": "get_time", "arguments": {"tz": "CET"}}])");
  EXPECT_EQ(out.content, std::nullopt);
  EXPECT_THAT(out.calls, ElementsAre(Call(0, "get_weather", R"({"city":"Paris"})"),
                                     Call(1, "get_time", R"({"tz":"CET"})")));
}

TEST(MistralTest, NameArgsFormAndContentBefore) {
  ToolCallOutput out =
      Whole(ToolCallFormat::kMistral, R"(Checking.[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"})"
                                      R"([TOOL_CALLS]get_time[ARGS]{"tz": "CET"})");
  EXPECT_EQ(out.content, "Checking.");
  EXPECT_THAT(out.calls, ElementsAre(Call(0, "get_weather", R"({"city":"Paris"})"),
                                     Call(1, "get_time", R"({"tz":"CET"})")));
}

TEST(MistralTest, MalformedCallsAreContent) {
  for (const char* text :
       {R"([TOOL_CALLS] [{"name": "a", "arguments": {}})", R"([TOOL_CALLS] [{"arguments": {}}])",
        R"([TOOL_CALLS]a[ARGS]{)", R"([TOOL_CALLS]a[ARGS][1])", "[TOOL_CALLS]"}) {
    ToolCallOutput out = Whole(ToolCallFormat::kMistral, text);
    EXPECT_EQ(out.content, text);
    EXPECT_TRUE(out.calls.empty()) << text;
  }
}

TEST(ToolCallStreamerTest, StreamedParsesLikeWholeForEveryPieceSize) {
  struct Case {
    ToolCallFormat format;
    std::string text;
  };
  const std::vector<Case> cases = {
      {ToolCallFormat::kHermes, kHermesTwoCalls},
      {ToolCallFormat::kHermes, "Just prose, with a < and a <tool but no call."},
      {ToolCallFormat::kLlama3Json,
       R"(<|python_tag|>{"name": "a", "parameters": {"q": "x"}}; {"name": "b", "parameters": {}})"},
      {ToolCallFormat::kLlama3Json, "  Paris is the capital."},
      {ToolCallFormat::kMistral,
       R"([TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}[TOOL_CALLS]now[ARGS]{})"},
      {ToolCallFormat::kMistral, R"([TOOL_CALLS] [{"name": "a", "arguments": {"x": [1, 2]}}])"},
  };
  for (const Case& c : cases) {
    const ToolCallOutput whole = Whole(c.format, c.text);
    for (size_t step : {1, 2, 3, 7, 1000}) {
      const ToolCallOutput streamed = Streamed({ToolCallMode::kParse, c.format, ""}, c.text, step);
      EXPECT_EQ(streamed.calls, whole.calls) << c.text << " step " << step;
      if (whole.calls.empty()) EXPECT_EQ(streamed.content, whole.content) << c.text;
    }
  }
}

TEST(ToolCallStreamerTest, ContentStreamsBeforeTheMarkerAndCallsComeAsTheyClose) {
  ToolCallStreamer streamer({ToolCallMode::kParse, ToolCallFormat::kHermes, ""}, CountingIds());
  EXPECT_EQ(streamer.Add("Let me check.").content, "Let me check.");
  StreamDelta d = streamer.Add("\n<tool");  // may become the marker: held back
  EXPECT_EQ(d.content, "\n");
  d = streamer.Add("_call>\n{\"name\": \"a\", \"arguments\": {\"x\": 1}}\n");
  EXPECT_TRUE(d.empty());
  d = streamer.Add("</tool_call>\n<tool_call>\n{\"name\"");
  ASSERT_EQ(d.calls.size(), 1u);
  EXPECT_EQ(d.calls[0].index, 0);
  EXPECT_TRUE(d.calls[0].first);
  EXPECT_EQ(d.calls[0].id, "call_0");
  EXPECT_EQ(d.calls[0].name, "a");
  EXPECT_EQ(d.calls[0].arguments, R"({"x":1})");
  d = streamer.Add(": \"b\", \"arguments\": {}}\n</tool_call>");
  ASSERT_EQ(d.calls.size(), 1u);
  EXPECT_EQ(d.calls[0].index, 1);
  EXPECT_TRUE(streamer.Finish().empty());
  EXPECT_EQ(streamer.calls().size(), 2u);
}

TEST(ToolCallStreamerTest, MalformedStreamedCallComesBackAsContent) {
  const std::string text = "Hi <tool_call>\n{\"name\": oops}\n</tool_call>";
  ToolCallOutput out = Streamed({ToolCallMode::kParse, ToolCallFormat::kHermes, ""}, text, 4);
  EXPECT_EQ(out.content, text);
  EXPECT_TRUE(out.calls.empty());
}

TEST(ToolCallStreamerTest, NamedFunctionStreamsArgumentFragments) {
  ToolCallStreamer streamer({ToolCallMode::kNamed, ToolCallFormat::kNone, "get_weather"},
                            CountingIds());
  StreamDelta d = streamer.Add("{\"city\"");
  ASSERT_EQ(d.calls.size(), 2u);
  EXPECT_TRUE(d.calls[0].first);
  EXPECT_EQ(d.calls[0].name, "get_weather");
  EXPECT_EQ(d.calls[0].arguments, "");
  EXPECT_EQ(d.calls[1].arguments, "{\"city\"");
  d = streamer.Add(": \"Paris\"}");
  ASSERT_EQ(d.calls.size(), 1u);
  EXPECT_FALSE(d.calls[0].first);
  EXPECT_TRUE(streamer.Finish().empty());
  EXPECT_THAT(streamer.calls(), ElementsAre(Call(0, "get_weather", R"({"city": "Paris"})")));
  EXPECT_EQ(d.content, "");
}

TEST(ToolCallStreamerTest, RequiredArrayBecomesCalls) {
  const std::string text =
      R"([{"name": "a", "parameters": {"x": 1}}, {"name": "b", "parameters": {}}])";
  const ToolCallPlan plan{ToolCallMode::kRequired, ToolCallFormat::kNone, ""};
  const ToolCallOutput whole = ParseWholeOutput(plan, text, CountingIds());
  EXPECT_EQ(whole.content, std::nullopt);
  EXPECT_THAT(whole.calls, ElementsAre(Call(0, "a", R"({"x":1})"), Call(1, "b", "{}")));
  for (size_t step : {1, 5, 100}) EXPECT_EQ(Streamed(plan, text, step).calls, whole.calls);
  // Cut short (max_tokens): the text stays.
  const ToolCallOutput cut = ParseWholeOutput(plan, R"([{"name": "a", "param)", CountingIds());
  EXPECT_EQ(cut.content, R"([{"name": "a", "param)");
  EXPECT_TRUE(cut.calls.empty());
}

TEST(ToolCallStreamerTest, OffAndNoFormatPassTextThrough) {
  for (const ToolCallPlan& plan :
       {ToolCallPlan{}, ToolCallPlan{ToolCallMode::kParse, ToolCallFormat::kNone, ""}}) {
    const std::string text = "<tool_call>{\"name\": \"a\", \"arguments\": {}}</tool_call>";
    EXPECT_EQ(Streamed(plan, text, 3).content, text);
    EXPECT_EQ(ParseWholeOutput(plan, text).content, text);
  }
}

}  // namespace
}  // namespace kvserve::tool_calls
