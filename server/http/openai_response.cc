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
    : context_(std::move(context)), choices_(context_.n) {}

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
    if (chat) {
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
