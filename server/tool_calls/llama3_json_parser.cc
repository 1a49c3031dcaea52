// Llama 3.1+/3.2 JSON tool calls: the template asks for a reply that is only
// {"name": function name, "parameters": {...}}, and the model may put
// <|python_tag|> first (a special token, so it shows only when kept in the
// text); several calls come separated by ';'. A reply that starts with
// anything else is content, never a call.
#include "server/tool_calls/json_scan.h"
#include "server/tool_calls/parsers.h"

namespace kvserve::tool_calls {
namespace {

constexpr std::string_view kPythonTag = "<|python_tag|>";

class Llama3JsonParser final : public ToolCallParser {
 public:
  ToolCallFormat format() const override { return ToolCallFormat::kLlama3Json; }

  CallsStart FindStart(std::string_view text) const override {
    const size_t first = SkipSpace(text, 0);
    const std::string_view rest = text.substr(first);
    // Leading whitespace is held: the reply may still turn out to be a call.
    if (rest.empty()) return {0, false};
    if (rest[0] == '{' || rest.substr(0, kPythonTag.size()) == kPythonTag) return {0, true};
    if (kPythonTag.substr(0, rest.size()) == rest) return {0, false};
    return {};
  }

  std::optional<ParsedCalls> Parse(std::string_view section, bool final) const override {
    ParsedCalls out;
    size_t pos = SkipSpace(section, 0);
    if (section.substr(pos, kPythonTag.size()) == kPythonTag) pos += kPythonTag.size();
    while (true) {
      pos = SkipSpace(section, pos);
      if (pos == section.size()) break;
      if (section[pos] != '{') return std::nullopt;
      const size_t end = JsonBracketEnd(section, pos);
      if (end == std::string_view::npos) {
        if (final) return std::nullopt;
        break;  // the call in progress
      }
      std::optional<FunctionCall> call = CallFromJson(section.substr(pos, end - pos));
      if (!call) return std::nullopt;
      out.calls.push_back(*std::move(call));
      pos = SkipSpace(section, end);
      if (pos < section.size() && section[pos] == ';')
        ++pos;
      else if (pos < section.size())
        return std::nullopt;
    }
    if (final && out.calls.empty()) return std::nullopt;
    return out;
  }
};

}  // namespace

std::unique_ptr<ToolCallParser> MakeLlama3JsonParser() {
  return std::make_unique<Llama3JsonParser>();
}

}  // namespace kvserve::tool_calls
