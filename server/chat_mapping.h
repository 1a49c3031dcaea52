// Chat messages ↔ the model's prompt: renders a ChatRequest's conversation
// with the model's template and turns it into the GenerateRequest the
// engine runs (prompt token ids, the caller's sampling and stopping, plus
// the model's end-of-turn tokens as stop tokens).
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "engine/text/chat_formatter.h"
#include "google/protobuf/repeated_ptr_field.h"
#include "kvserve/v1/inference.pb.h"
#include "server/tool_calls/tool_call_parser.h"

namespace kvserve {

/// What a server knows about chat: the formatter, or why there is none.
struct ChatAccess {
  const ChatFormatter* formatter = nullptr;
  std::string unavailable_reason;  // for FAILED_PRECONDITION when formatter is null
  /// How the model writes tool calls (tool_choice "auto"): --tool_call_parser,
  /// or what the template teaches.
  tool_calls::ToolCallFormat tool_call_format = tool_calls::ToolCallFormat::kNone;
};

inline constexpr int kMaxChatMessages = 4096;

/// Validates and renders. Errors: FAILED_PRECONDITION without a template;
/// INVALID_ARGUMENT naming the field (messages, messages[i].role,
/// tools_json) or carrying the template's own message ("chat template: ...").
absl::StatusOr<ChatPrompt> RenderChat(
    const ChatAccess& chat,
    const google::protobuf::RepeatedPtrField<v1::ChatMessage>& messages,
    const std::string& tools_json, bool add_generation_prompt);

/// The generate request for a rendered chat.
v1::GenerateRequest ToGenerateRequest(const v1::ChatRequest& chat, const ChatPrompt& prompt,
                                      const ChatFormatter& formatter);

}  // namespace kvserve
