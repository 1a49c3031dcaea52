// A Jinja chat-template interpreter: renders a model's chat template exactly
// as Python jinja2 does with the settings transformers' apply_chat_template
// uses (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loop
// controls, `tojson` without ASCII escaping, `raise_exception`,
// `strftime_now`). The supported subset is in docs/chat_templates.md.
// A parsed template is immutable: Render is const and thread-safe.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace kvserve {

namespace chat_template {
struct Program;
}  // namespace chat_template

class ChatTemplate {
 public:
  /// Parses a template; a syntax error is INVALID_ARGUMENT naming the line and
  /// what was expected.
  static absl::StatusOr<ChatTemplate> Parse(std::string_view source);

  /// Renders with the given variables (a JSON object). Errors are
  /// INVALID_ARGUMENT; raise_exception('msg') gives an error whose message is
  /// exactly msg and for which IsTemplateException() is true.
  absl::StatusOr<std::string> Render(const nlohmann::ordered_json& context) const;

 private:
  explicit ChatTemplate(std::shared_ptr<const chat_template::Program> program)
      : program_(std::move(program)) {}

  // Shared so that copies are cheap; never mutated after Parse.
  std::shared_ptr<const chat_template::Program> program_;
};

/// True for the error of a template's raise_exception(...).
bool IsTemplateException(const absl::Status& status);

/// What transformers' apply_chat_template passes: messages,
/// add_generation_prompt, tools (only when non-null), bos_token, eos_token,
/// plus `extra` keys merged in (they override the others).
absl::StatusOr<std::string> ApplyChatTemplate(
    const ChatTemplate& tmpl, const nlohmann::ordered_json& messages, bool add_generation_prompt,
    const nlohmann::ordered_json* tools, std::string_view bos_token, std::string_view eos_token,
    const nlohmann::ordered_json& extra = nlohmann::ordered_json::object());

}  // namespace kvserve
