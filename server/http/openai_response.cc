#include "server/http/openai_response.h"

#include "absl/strings/str_cat.h"

namespace kvserve::http {

using nlohmann::json;

const char* FinishReasonName(FinishReason reason) {
  return reason == FinishReason::kLength ? "length" : "stop";
}

std::string DumpJson(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string SseEvent(const json& value) { return absl::StrCat("data: ", DumpJson(value), "\n\n"); }

OpenAiResponseBuilder::OpenAiResponseBuilder(ResponseContext context)
    : context_(std::move(context)), choices_(context_.n) {
  if (context_.stream && context_.endpoint == Endpoint::kChat &&
      context_.tools.mode != tool_calls::ToolCallMode::kOff) {
    for (Choice& c : choices_)
      c.tools = std::make_unique<tool_calls::ToolCallStreamer>(context_.tools);
  }
}

namespace {

// OpenAI's delta.tool_calls[0] for one update of a call.
json CallDeltaJson(const tool_calls::CallDelta& d) {
  json call = {{"index", d.index}};
  if (d.first) {
    call["id"] = d.id;
    call["type"] = "function";
    call["function"] = {{"name", d.name}, {"arguments", d.arguments}};
  } else {
    call["function"] = {{"arguments", d.arguments}};
  }
  return call;
}

json ToolCallsJson(const std::vector<tool_calls::ToolCall>& calls) {
  json out = json::array();
  for (const tool_calls::ToolCall& c : calls) {
    out.push_back({{"id", c.id},
                   {"type", "function"},
                   {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
  }
  return out;
}

// "tool_calls" when the reply called tools, unless max_tokens cut it (the
// client must know that the last call may be cut too).
const char* ChatFinishReason(FinishReason reason, bool called) {
  return called && reason != FinishReason::kLength ? "tool_calls" : FinishReasonName(reason);
}

}  // namespace

// Chat streams with tools: the content (what is not a call) in one chunk,
// then one chunk per call update, the finish reason on the last.
void OpenAiResponseBuilder::AddChatChunks(int index, Choice& choice, const RequestOutput& output,
                                          json logprobs, std::string& sse) {
  tool_calls::StreamDelta d = choice.tools->Add(output.text);
  if (output.finished()) {
    tool_calls::StreamDelta rest = choice.tools->Finish();
    d.content += rest.content;
    for (auto& c : rest.calls) d.calls.push_back(std::move(c));
  }
  std::vector<json> items;
  json delta = json::object();
  if (!choice.sent_role) {
    delta["role"] = "assistant";
    choice.sent_role = true;
  }
  if (!d.content.empty() || !delta.empty() || !logprobs.is_null()) delta["content"] = d.content;
  if (!delta.empty() || (d.calls.empty() && output.finished())) {
    items.push_back({{"index", index}, {"delta", std::move(delta)}, {"logprobs", logprobs}});
  }
  for (const tool_calls::CallDelta& c : d.calls) {
    items.push_back({{"index", index},
                     {"delta", {{"tool_calls", json::array({CallDeltaJson(c)})}}},
                     {"logprobs", nullptr}});
  }
  for (size_t i = 0; i < items.size(); ++i) {
    json& item = items[i];
    item["finish_reason"] = nullptr;
    if (output.finished() && i + 1 == items.size()) {
      item["finish_reason"] =
          ChatFinishReason(output.finish_reason, !choice.tools->calls().empty());
    }
    json chunk = ChunkEnvelope();
    chunk["choices"].push_back(std::move(item));
    sse += SseEvent(chunk);
  }
}

std::string OpenAiResponseBuilder::TokenText(int32_t id) const {
  if (context_.tokenizer == nullptr) return absl::StrCat("token_id:", id);
  return context_.tokenizer->Decode({id}, /*skip_special_tokens=*/false);
}

json OpenAiResponseBuilder::LogprobsOf(Choice& choice, const RequestOutput& output) const {
  if (context_.endpoint == Endpoint::kCompletions) {
    json tokens = json::array(), token_logprobs = json::array(), top = json::array(),
         offsets = json::array();
    for (const TokenLogprobs& l : output.logprobs) {
      const std::string text = TokenText(l.token.token_id);
      tokens.push_back(text);
      token_logprobs.push_back(l.token.logprob);
      json alternatives = json::object();
      for (const TokenLogprob& t : l.top) alternatives[TokenText(t.token_id)] = t.logprob;
      top.push_back(std::move(alternatives));
      offsets.push_back(choice.text_offset);
      choice.text_offset += text.size();
    }
    return {{"tokens", tokens}, {"token_logprobs", token_logprobs}, {"top_logprobs", top},
            {"text_offset", offsets}};
  }
  auto entry = [&](const TokenLogprob& t) {
    const std::string bytes = context_.tokenizer != nullptr
                                  ? context_.tokenizer->TokenBytes(t.token_id)
                                  : TokenText(t.token_id);
    const auto* begin = reinterpret_cast<const unsigned char*>(bytes.data());
    // `token` is the token's text (U+FFFD for a partial character); `bytes`
    // its raw bytes, which join across tokens into the content.
    return json{{"token", TokenText(t.token_id)},
                {"logprob", t.logprob},
                {"bytes", std::vector<int>(begin, begin + bytes.size())}};
  };
  json content = json::array();
  for (const TokenLogprobs& l : output.logprobs) {
    json item = entry(l.token);
    json top = json::array();
    for (const TokenLogprob& t : l.top) top.push_back(entry(t));
    item["top_logprobs"] = std::move(top);
    content.push_back(std::move(item));
  }
  return {{"content", content}};
}

void OpenAiResponseBuilder::AppendLogprobs(json& into, const json& more) const {
  if (into.is_null()) {
    into = more;
    return;
  }
  for (auto it = more.begin(); it != more.end(); ++it) {
    for (const json& v : it.value()) into[it.key()].push_back(v);
  }
}

json OpenAiResponseBuilder::ChunkEnvelope() const {
  const bool chat = context_.endpoint == Endpoint::kChat;
  json chunk = {{"id", context_.id},
                {"object", chat ? "chat.completion.chunk" : "text_completion"},
                {"created", context_.created},
                {"model", context_.model},
                {"choices", json::array()}};
  if (context_.include_usage) chunk["usage"] = nullptr;
  return chunk;
}

json OpenAiResponseBuilder::Usage() const {
  uint32_t completion = 0;
  for (const Choice& c : choices_) completion += c.completion_tokens;
  return {{"prompt_tokens", prompt_tokens_},
          {"completion_tokens", completion},
          {"total_tokens", prompt_tokens_ + completion}};
}

void OpenAiResponseBuilder::Add(int index, const RequestOutput& output, std::string& sse) {
  Choice& choice = choices_[index];
  prompt_tokens_ = output.prompt_tokens;
  choice.completion_tokens = output.completion_tokens;
  json logprobs = context_.logprobs ? LogprobsOf(choice, output) : json();
  if (output.finished()) {
    choice.finish = output.finish_reason;
    ++finished_;
  }
  if (!context_.stream) {
    choice.text += output.text;
    if (context_.logprobs) AppendLogprobs(choice.logprobs, logprobs);
    return;
  }
  const bool chat = context_.endpoint == Endpoint::kChat;
  if (choice.tools) {
    AddChatChunks(index, choice, output, std::move(logprobs), sse);
    return;
  }
  json item = {{"index", index}, {"logprobs", logprobs}, {"finish_reason", nullptr}};
  if (chat) {
    json delta = json::object();
    if (!choice.sent_role) {
      delta["role"] = "assistant";
      choice.sent_role = true;
    }
    if (!output.text.empty() || !output.finished()) delta["content"] = output.text;
    item["delta"] = std::move(delta);
  } else {
    item["text"] = choice.echoed ? output.text : context_.echo + output.text;
    choice.echoed = true;
  }
  if (output.finished()) item["finish_reason"] = FinishReasonName(output.finish_reason);
  json chunk = ChunkEnvelope();
  chunk["choices"].push_back(std::move(item));
  sse += SseEvent(chunk);
}

std::string OpenAiResponseBuilder::End() const {
  std::string sse;
  if (context_.include_usage) {
    json chunk = ChunkEnvelope();
    chunk["usage"] = Usage();
    sse += SseEvent(chunk);
  }
  sse += "data: [DONE]\n\n";
  return sse;
}

json OpenAiResponseBuilder::Response() const {
  const bool chat = context_.endpoint == Endpoint::kChat;
  json choices = json::array();
  for (int i = 0; i < context_.n; ++i) {
    const Choice& c = choices_[i];
    json item = {{"index", i},
                 {"logprobs", c.logprobs},
                 {"finish_reason", FinishReasonName(c.finish)}};
    if (chat && context_.tools.mode != tool_calls::ToolCallMode::kOff) {
      tool_calls::ToolCallOutput out = tool_calls::ParseWholeOutput(context_.tools, c.text);
      item["message"] = {{"role", "assistant"}, {"content", nullptr}};
      if (out.content) item["message"]["content"] = *out.content;
      if (!out.calls.empty()) item["message"]["tool_calls"] = ToolCallsJson(out.calls);
      item["finish_reason"] = ChatFinishReason(c.finish, !out.calls.empty());
    } else if (chat) {
      item["message"] = {{"role", "assistant"}, {"content", c.text}};
    } else {
      item["text"] = context_.echo + c.text;
    }
    choices.push_back(std::move(item));
  }
  return {{"id", context_.id},
          {"object", chat ? "chat.completion" : "text_completion"},
          {"created", context_.created},
          {"model", context_.model},
          {"choices", std::move(choices)},
          {"usage", Usage()}};
}

}  // namespace kvserve::http
