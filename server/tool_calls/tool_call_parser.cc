#include "server/tool_calls/tool_call_parser.h"

#include "absl/strings/str_cat.h"
#include "server/tool_calls/json_scan.h"
#include "server/tool_calls/parsers.h"

namespace kvserve::tool_calls {

ParsedOutput ParseOutput(const ToolCallParser& parser, std::string_view text) {
  ParsedOutput out;
  const CallsStart start = parser.FindStart(text);
  std::optional<ParsedCalls> parsed;
  if (start.pos != std::string_view::npos) {
    parsed = parser.Parse(text.substr(start.pos), /*final=*/true);
  }
  if (!parsed) {
    // No call, or a malformed one: the text stays what the model said.
    if (!text.empty()) out.content = std::string(text);
    return out;
  }
  std::string content(Trim(text.substr(0, start.pos)));
  if (!parsed->content.empty()) {
    absl::StrAppend(&content, content.empty() ? "" : "\n", parsed->content);
  }
  if (!content.empty()) out.content = std::move(content);
  out.calls = std::move(parsed->calls);
  return out;
}

absl::StatusOr<ToolCallFormat> ToolCallFormatFromName(std::string_view name) {
  if (name == "none") return ToolCallFormat::kNone;
  if (name == "llama3_json") return ToolCallFormat::kLlama3Json;
  if (name == "hermes") return ToolCallFormat::kHermes;
  if (name == "mistral") return ToolCallFormat::kMistral;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown tool call parser \"", std::string(name),
                   "\": one of auto, llama3_json, hermes, mistral, none"));
}

const char* ToolCallFormatName(ToolCallFormat format) {
  switch (format) {
    case ToolCallFormat::kLlama3Json:
      return "llama3_json";
    case ToolCallFormat::kHermes:
      return "hermes";
    case ToolCallFormat::kMistral:
      return "mistral";
    case ToolCallFormat::kNone:
      break;
  }
  return "none";
}

ToolCallFormat DetectToolCallFormat(std::string_view chat_template) {
  auto has = [&](std::string_view s) { return chat_template.find(s) != std::string_view::npos; };
  if (has("<tool_call>")) return ToolCallFormat::kHermes;
  if (has("[TOOL_CALLS]")) return ToolCallFormat::kMistral;
  // Llama 3.1/3.2/3.3 teach {"name": ..., "parameters": ...} in Llama-3 headers.
  if (has("<|start_header_id|>") && (has("<|python_tag|>") || has("\"parameters\": "))) {
    return ToolCallFormat::kLlama3Json;
  }
  return ToolCallFormat::kNone;
}

std::unique_ptr<ToolCallParser> MakeToolCallParser(ToolCallFormat format) {
  switch (format) {
    case ToolCallFormat::kLlama3Json:
      return MakeLlama3JsonParser();
    case ToolCallFormat::kHermes:
      return MakeHermesParser();
    case ToolCallFormat::kMistral:
      return MakeMistralParser();
    case ToolCallFormat::kNone:
      break;
  }
  return nullptr;
}

}  // namespace kvserve::tool_calls
