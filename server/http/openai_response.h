// OpenAI response objects, built from what the engine delivers for each
// choice: the whole response (non-streaming) or server-sent-event chunks.
//
//   completions: "text_completion", choices[].text, logprobs {tokens, token_logprobs,
//                top_logprobs, text_offset}
//   chat:        "chat.completion" / "chat.completion.chunk", choices[].message or
//                .delta {role, content, tool_calls}, logprobs {content: [{token, logprob,
//                bytes, top_logprobs}]}; finish_reason "tool_calls" when the reply calls
//                tools (server/tool_calls turns the text into calls)
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/request.h"
#include "engine/text/tokenizer.h"
#include "nlohmann/json.hpp"
#include "server/http/openai_request.h"
#include "server/tool_calls/tool_call_streamer.h"

namespace kvserve::http {

struct ResponseContext {
  Endpoint endpoint = Endpoint::kCompletions;
  std::string id;       // "cmpl-…" or "chatcmpl-…"
  int64_t created = 0;  // Unix seconds
  std::string model;
  int n = 1;
  bool stream = false;
  bool include_usage = false;
  bool logprobs = false;
  std::string echo;  // completions: text before each choice's (`echo: true`: the prompt)
  const Tokenizer* tokenizer = nullptr;  // for the token strings of logprobs; may be null
  tool_calls::ToolCallPlan tools;        // chat: how the text becomes tool calls
};

/// "stop" for EOS and stop strings/tokens, "length" for max_tokens.
const char* FinishReasonName(FinishReason reason);

class OpenAiResponseBuilder {
 public:
  explicit OpenAiResponseBuilder(ResponseContext context);

  /// Streaming: appends `data: {chunk}\n\n` events for this output to `sse`.
  /// Non-streaming: accumulates it for Response().
  void Add(int choice, const RequestOutput& output, std::string& sse);
  bool all_finished() const { return finished_ == context_.n; }
  /// Streaming, once every choice finished: the usage chunk (when asked) and `data: [DONE]`.
  std::string End() const;
  /// Non-streaming, once every choice finished.
  nlohmann::json Response() const;

 private:
  struct Choice {
    std::string text;
    nlohmann::json logprobs;  // completions: {tokens, ...}; chat: {content: [...]}
    size_t text_offset = 0;   // completions' text_offset of the next token
    FinishReason finish = FinishReason::kNone;
    uint32_t completion_tokens = 0;
    bool sent_role = false;   // chat streams open each choice with {role: assistant}
    bool echoed = false;      // completion streams open each choice with the echo
    std::unique_ptr<tool_calls::ToolCallStreamer> tools;  // chat streams with tools
  };

  void AddChatChunks(int index, Choice& choice, const RequestOutput& output,
                     nlohmann::json logprobs, std::string& sse);

  nlohmann::json LogprobsOf(Choice& choice, const RequestOutput& output) const;
  void AppendLogprobs(nlohmann::json& into, const nlohmann::json& more) const;
  nlohmann::json ChunkEnvelope() const;
  nlohmann::json Usage() const;
  std::string TokenText(int32_t id) const;

  ResponseContext context_;
  std::vector<Choice> choices_;
  uint32_t prompt_tokens_ = 0;
  int finished_ = 0;
};

/// `data: <json>\n\n`, with invalid UTF-8 replaced rather than throwing.
std::string SseEvent(const nlohmann::json& value);
/// JSON text, with invalid UTF-8 replaced rather than throwing.
std::string DumpJson(const nlohmann::json& value);

}  // namespace kvserve::http
