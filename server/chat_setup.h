// Builds the server's chat support from the model's template (or the one
// given with --chat_template) once the engine exists.
#pragma once

#include <memory>
#include <optional>

#include "absl/status/statusor.h"
#include "engine/core/engine.h"
#include "engine/text/chat_formatter.h"
#include "server/chat_mapping.h"

namespace kvserve {

struct ChatSetup {
  std::unique_ptr<ChatFormatter> formatter;  // null when chat is unavailable
  ChatAccess access;                         // what the service is given
};

/// Without a template or a tokenizer, chat is unavailable (the reason says
/// why). A template that does not parse is an error when `required` (it was
/// named on the command line); otherwise chat is unavailable and the reason
/// carries the parse error, while Generate keeps working.
absl::StatusOr<ChatSetup> SetUpChat(const std::optional<ChatTemplateSource>& source,
                                    const Engine& engine, bool required);

/// --tool_call_parser: "auto" reads the format off the template (none
/// without one); the other names choose it. INVALID_ARGUMENT for an unknown name.
absl::StatusOr<tool_calls::ToolCallFormat> ResolveToolCallFormat(
    const std::string& flag, const std::optional<ChatTemplateSource>& source);

}  // namespace kvserve
