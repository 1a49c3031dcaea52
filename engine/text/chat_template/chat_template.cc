#include "engine/text/chat_template/chat_template.h"

#include "absl/strings/cord.h"
#include "engine/text/chat_template/ast.h"
#include "engine/text/chat_template/interpreter.h"
#include "engine/text/chat_template/json_dump.h"
#include "engine/text/chat_template/parser.h"

namespace kvserve {
namespace {

// Marks the status of a template's raise_exception(...).
constexpr absl::string_view kTemplateExceptionPayload = "kvserve.chat_template/raise_exception";

}  // namespace

absl::StatusOr<ChatTemplate> ChatTemplate::Parse(std::string_view source) {
  try {
    auto program = std::make_shared<chat_template::Program>(chat_template::ParseTemplate(source));
    return ChatTemplate(std::move(program));
  } catch (const chat_template::TemplateError& e) {
    return absl::InvalidArgumentError(absl::StrCat("chat template syntax error: ", e.message));
  }
}

absl::StatusOr<std::string> ChatTemplate::Render(const nlohmann::ordered_json& context) const {
  if (!context.is_object()) {
    return absl::InvalidArgumentError("chat template context must be a JSON object");
  }
  try {
    chat_template::Value variables = chat_template::FromJson(context);
    chat_template::Interpreter interpreter(*program_, variables.as_dict());
    return interpreter.Render();
  } catch (const chat_template::TemplateError& e) {
    if (e.raised_by_template) {
      absl::Status status = absl::InvalidArgumentError(e.message);
      status.SetPayload(kTemplateExceptionPayload, absl::Cord("1"));
      return status;
    }
    return absl::InvalidArgumentError(absl::StrCat("chat template error: ", e.message));
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError("chat template: out of memory while rendering");
  }
}

bool IsTemplateException(const absl::Status& status) {
  return status.GetPayload(kTemplateExceptionPayload).has_value();
}

absl::StatusOr<std::string> ApplyChatTemplate(const ChatTemplate& tmpl,
                                              const nlohmann::ordered_json& messages,
                                              bool add_generation_prompt,
                                              const nlohmann::ordered_json* tools,
                                              std::string_view bos_token,
                                              std::string_view eos_token,
                                              const nlohmann::ordered_json& extra) {
  if (!extra.is_object()) return absl::InvalidArgumentError("chat template extra variables must be a JSON object");
  nlohmann::ordered_json context = nlohmann::ordered_json::object();
  context["messages"] = messages;
  if (tools != nullptr && !tools->is_null()) context["tools"] = *tools;
  context["add_generation_prompt"] = add_generation_prompt;
  context["bos_token"] = std::string(bos_token);
  context["eos_token"] = std::string(eos_token);
  for (const auto& [key, value] : extra.items()) context[key] = value;
  return tmpl.Render(context);
}

}  // namespace kvserve
