// Hermes 2 Pro and Qwen2.5/Qwen3 tool calls: each call is a JSON object
// between <tool_call> and </tool_call> (on lines of their own); text before
// the first call is content. A last call left unclosed at the end of the
// output is taken when its JSON is whole (the model may stop at its
// end-of-turn token instead of writing the closing tag), as vLLM does.
#include "server/tool_calls/json_scan.h"
#include "server/tool_calls/parsers.h"

namespace kvserve::tool_calls {
namespace {

constexpr std::string_view kOpen = "<tool_call>";
constexpr std::string_view kClose = "</tool_call>";

class HermesParser final : public ToolCallParser {
 public:
  ToolCallFormat format() const override { return ToolCallFormat::kHermes; }

  CallsStart FindStart(std::string_view text) const override {
    if (size_t pos = text.find(kOpen); pos != std::string_view::npos) return {pos, true};
    return {PartialMarkerStart(text, kOpen), false};
  }

  std::optional<ParsedCalls> Parse(std::string_view section, bool final) const override {
    ParsedCalls out;
    std::string outside;
    size_t pos = 0;
    while (true) {
      const size_t open = section.find(kOpen, pos);
      if (open == std::string_view::npos) {
        if (final) outside.append(section.substr(pos));
        break;
      }
      outside.append(section.substr(pos, open - pos));
      const size_t body = open + kOpen.size();
      const size_t close = section.find(kClose, body);
      if (close == std::string_view::npos) {
        if (!final) break;  // the call in progress
        std::optional<FunctionCall> call = CallFromJson(Trim(section.substr(body)));
        if (!call) return std::nullopt;
        out.calls.push_back(*std::move(call));
        break;
      }
      std::optional<FunctionCall> call = CallFromJson(Trim(section.substr(body, close - body)));
      if (!call) return std::nullopt;
      out.calls.push_back(*std::move(call));
      pos = close + kClose.size();
    }
    if (final && out.calls.empty()) return std::nullopt;
    out.content = std::string(Trim(outside));
    return out;
  }
};

}  // namespace

std::unique_ptr<ToolCallParser> MakeHermesParser() { return std::make_unique<HermesParser>(); }

}  // namespace kvserve::tool_calls
