// Mistral tool calls: [TOOL_CALLS] then a JSON array of {"name", "arguments"}
// objects (v0.3 and the tokenizers of that generation), or, from the v11
// tokenizers on, [TOOL_CALLS]name[ARGS]{...} once per call. Text before the
// first [TOOL_CALLS] is content. [TOOL_CALLS] and [ARGS] are control tokens:
// the parser sees them only where the output keeps special tokens.
#include "nlohmann/json.hpp"
#include "server/tool_calls/json_scan.h"
#include "server/tool_calls/parsers.h"

namespace kvserve::tool_calls {
namespace {

constexpr std::string_view kMarker = "[TOOL_CALLS]";
constexpr std::string_view kArgs = "[ARGS]";

class MistralParser final : public ToolCallParser {
 public:
  ToolCallFormat format() const override { return ToolCallFormat::kMistral; }

  CallsStart FindStart(std::string_view text) const override {
    if (size_t pos = text.find(kMarker); pos != std::string_view::npos) return {pos, true};
    return {PartialMarkerStart(text, kMarker), false};
  }

  std::optional<ParsedCalls> Parse(std::string_view section, bool final) const override {
    ParsedCalls out;
    size_t pos = 0;
    while (true) {
      pos = SkipSpace(section, pos);
      if (pos == section.size()) break;
      if (section.substr(pos, kMarker.size()) != kMarker) {
        if (!final && kMarker.substr(0, section.size() - pos) == section.substr(pos)) break;
        return std::nullopt;
      }
      pos = SkipSpace(section, pos + kMarker.size());
      if (pos == section.size()) {
        if (final) return std::nullopt;
        break;
      }
      size_t end;
      if (section[pos] == '[') {
        end = JsonBracketEnd(section, pos);
        if (end == std::string_view::npos) {
          if (final) return std::nullopt;
          break;
        }
        if (!AppendArray(section.substr(pos, end - pos), out.calls)) return std::nullopt;
      } else {
        const size_t args = section.find(kArgs, pos);
        if (args == std::string_view::npos) {
          if (final) return std::nullopt;
          break;
        }
        const size_t object = SkipSpace(section, args + kArgs.size());
        end = object < section.size() && section[object] == '{' ? JsonBracketEnd(section, object)
                                                                : std::string_view::npos;
        if (end == std::string_view::npos) {
          if (final || object < section.size() && section[object] != '{') return std::nullopt;
          break;
        }
        const nlohmann::ordered_json arguments = nlohmann::ordered_json::parse(
            section.substr(object, end - object), nullptr, /*allow_exceptions=*/false);
        const std::string_view name = Trim(section.substr(pos, args - pos));
        if (arguments.is_discarded() || !arguments.is_object() || name.empty()) {
          return std::nullopt;
        }
        out.calls.push_back({std::string(name), arguments.dump()});
      }
      pos = end;
    }
    if (final && out.calls.empty()) return std::nullopt;
    return out;
  }

 private:
  static bool AppendArray(std::string_view text, std::vector<FunctionCall>& calls) {
    const nlohmann::ordered_json array =
        nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (array.is_discarded() || !array.is_array() || array.empty()) return false;
    for (const auto& item : array) {
      std::optional<FunctionCall> call = CallFromJson(item.dump());
      if (!call) return false;
      calls.push_back(*std::move(call));
    }
    return true;
  }
};

}  // namespace

std::unique_ptr<ToolCallParser> MakeMistralParser() { return std::make_unique<MistralParser>(); }

}  // namespace kvserve::tool_calls
