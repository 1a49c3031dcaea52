#include "server/chat_setup.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/logging.h"

namespace kvserve {

absl::StatusOr<ChatSetup> SetUpChat(const std::optional<ChatTemplateSource>& source,
                                    const Engine& engine, bool required) {
  ChatSetup setup;
  if (engine.tokenizer() == nullptr) {
    setup.access.unavailable_reason = "the model has no tokenizer";
  } else if (!source) {
    setup.access.unavailable_reason =
        "the model has no chat template (give one with --chat_template FILE)";
  } else {
    const ModelInfo& info = engine.info();
    absl::StatusOr<std::unique_ptr<ChatFormatter>> formatter =
        ChatFormatter::Create(*source, *engine.tokenizer(), info.eos_token_ids, info.bos_token_id);
    if (!formatter.ok()) {
      if (required) return formatter.status();
      setup.access.unavailable_reason = std::string(formatter.status().message());
    } else {
      setup.formatter = *std::move(formatter);
      setup.access.formatter = setup.formatter.get();
      // What --tool_call_parser=auto picks; main applies the flag over it.
      setup.access.tool_call_format = tool_calls::DetectToolCallFormat(source->text);
      KV_LOG(INFO) << "chat template from " << source->origin << "; turns end at ids ["
                   << absl::StrJoin(setup.formatter->end_of_turn_token_ids(), ", ")
                   << "] and the EOS ids";
      return setup;
    }
  }
  KV_LOG(WARNING) << "chat is unavailable: " << setup.access.unavailable_reason;
  return setup;
}

absl::StatusOr<tool_calls::ToolCallFormat> ResolveToolCallFormat(
    const std::string& flag, const std::optional<ChatTemplateSource>& source) {
  if (flag == "auto") {
    return source ? tool_calls::DetectToolCallFormat(source->text)
                  : tool_calls::ToolCallFormat::kNone;
  }
  return tool_calls::ToolCallFormatFromName(flag);
}

}  // namespace kvserve
