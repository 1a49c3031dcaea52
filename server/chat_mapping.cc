#include "server/chat_mapping.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "engine/text/chat_template/chat_template.h"

namespace kvserve {
namespace {

// One message as the real templates read it (OpenAI's shape): an assistant's
// tool calls as {id, type, function: {name, arguments}} with the arguments as
// an object (Llama 3.1 and Qwen2.5 write `arguments | tojson`, which would
// quote a string twice; Hermes takes either). An assistant that only called
// tools has content "" rather than null: the tool-call templates test it for
// truth either way, and the others (plain ChatML) concatenate it.
//
// Mistral's templates refuse ids that are not 9 alphanumerics: for them an
// id is cut to its last 9 characters (as vLLM does), so that ids kvserve made
// ("call_" + 24) come back through the conversation.
std::string TemplateId(const std::string& id, bool nine_chars) {
  return nine_chars && id.size() > 9 ? id.substr(id.size() - 9) : id;
}

absl::StatusOr<nlohmann::ordered_json> MessageJson(const v1::ChatMessage& message, int i,
                                                   bool nine_char_ids) {
  nlohmann::ordered_json turn = {{"role", message.role()}, {"content", message.content()}};
  if (message.tool_calls_size() > 0) {
    nlohmann::ordered_json calls = nlohmann::ordered_json::array();
    for (int j = 0; j < message.tool_calls_size(); ++j) {
      const v1::ToolCall& call = message.tool_calls(j);
      const std::string at = absl::StrCat("messages[", i, "].tool_calls[", j, "]");
      if (call.name().empty()) return absl::InvalidArgumentError(at + ".name is empty");
      nlohmann::ordered_json arguments = nlohmann::ordered_json::parse(
          call.arguments().empty() ? "{}" : call.arguments(), nullptr, /*allow_exceptions=*/false);
      if (arguments.is_discarded() || !arguments.is_object()) {
        return absl::InvalidArgumentError(at + ".arguments must be the JSON text of an object");
      }
      calls.push_back({{"id", TemplateId(call.id(), nine_char_ids)},
                       {"type", "function"},
                       {"function", {{"name", call.name()}, {"arguments", std::move(arguments)}}}});
    }
    turn["tool_calls"] = std::move(calls);
  }
  if (!message.tool_call_id().empty()) {
    turn["tool_call_id"] = TemplateId(message.tool_call_id(), nine_char_ids);
  }
  if (!message.name().empty()) turn["name"] = message.name();
  return turn;
}

}  // namespace

absl::StatusOr<ChatPrompt> RenderChat(
    const ChatAccess& chat,
    const google::protobuf::RepeatedPtrField<v1::ChatMessage>& messages,
    const std::string& tools_json, bool add_generation_prompt) {
  if (chat.formatter == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "chat is not available for this model: ", chat.unavailable_reason));
  }
  if (messages.empty()) {
    return absl::InvalidArgumentError("messages: at least one message is required");
  }
  if (messages.size() > kMaxChatMessages) {
    return absl::InvalidArgumentError(absl::StrCat("messages: ", messages.size(),
                                                   " messages, the limit is ", kMaxChatMessages));
  }
  nlohmann::ordered_json conversation = nlohmann::ordered_json::array();
  for (int i = 0; i < messages.size(); ++i) {
    const v1::ChatMessage& message = messages[i];
    if (message.role().empty()) {
      return absl::InvalidArgumentError(absl::StrCat("messages[", i, "].role is empty"));
    }
    // proto3 has already checked that role and content are valid UTF-8.
    absl::StatusOr<nlohmann::ordered_json> turn =
        MessageJson(message, i, chat.tool_call_format == tool_calls::ToolCallFormat::kMistral);
    if (!turn.ok()) return turn.status();
    conversation.push_back(*std::move(turn));
  }
  nlohmann::ordered_json tools;
  const nlohmann::ordered_json* tools_arg = nullptr;
  if (!tools_json.empty()) {
    tools = nlohmann::ordered_json::parse(tools_json, nullptr, /*allow_exceptions=*/false);
    if (tools.is_discarded() || !tools.is_array()) {
      return absl::InvalidArgumentError("tools_json must be a JSON array of tool definitions");
    }
    tools_arg = &tools;
  }
  absl::StatusOr<ChatPrompt> prompt =
      chat.formatter->Format(conversation, add_generation_prompt, tools_arg);
  if (!prompt.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("chat template: ", prompt.status().message()));
  }
  return prompt;
}

v1::GenerateRequest ToGenerateRequest(const v1::ChatRequest& chat, const ChatPrompt& prompt,
                                      const ChatFormatter& formatter) {
  v1::GenerateRequest request;
  request.set_request_id(chat.request_id());
  request.mutable_token_ids()->mutable_ids()->Add(prompt.token_ids.begin(),
                                                  prompt.token_ids.end());
  if (chat.has_sampling()) *request.mutable_sampling() = chat.sampling();
  if (chat.has_stopping()) *request.mutable_stopping() = chat.stopping();
  v1::StoppingCriteria* stopping = request.mutable_stopping();
  for (int32_t id : formatter.end_of_turn_token_ids()) {
    const auto& ids = stopping->stop_token_ids();
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) stopping->add_stop_token_ids(id);
  }
  return request;
}

}  // namespace kvserve
