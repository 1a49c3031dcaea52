// Finds the tool calls in a model's output. Each model family writes them its
// own way (one parser per family, as vLLM's tool_parsers/):
//
//   llama3_json  Llama 3.1+/3.2: the whole reply is {"name": f, "parameters": {...}},
//                maybe after <|python_tag|>, several separated by ';'
//   hermes       Hermes 2 Pro, Qwen2.5/Qwen3: <tool_call>\n{"name": f, "arguments":
//   {...}}\n</tool_call>,
//                several allowed, text before them is content
//   mistral      [TOOL_CALLS][{"name": f, "arguments": {...}}, ...], or the newer
//                [TOOL_CALLS]f[ARGS]{...} (repeated for several)
//
// A parser works on the whole text so far: streaming re-reads the calls'
// section each time (it is short, and this keeps one code path for both).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "server/tool_calls/tool_call.h"

namespace kvserve::tool_calls {

enum class ToolCallFormat { kNone, kLlama3Json, kHermes, kMistral };

/// Where the calls' section begins in a text.
struct CallsStart {
  size_t pos = std::string_view::npos;  // npos: no call here (all of it is content)
  /// false: `pos` starts what may still become a marker (a prefix of it, or
  /// leading whitespace for llama3_json): hold it back, it is not content yet.
  bool certain = false;
};

/// The calls in a calls' section (from CallsStart::pos to the end).
struct ParsedCalls {
  std::vector<FunctionCall> calls;
  std::string content;  // text outside the calls in the section (trimmed), if any
};

class ToolCallParser {
 public:
  virtual ~ToolCallParser() = default;
  virtual ToolCallFormat format() const = 0;
  virtual CallsStart FindStart(std::string_view text) const = 0;
  /// `final`: the output is complete, and anything malformed is an error
  /// (nullopt). Otherwise only the calls already closed come back, and an
  /// unfinished tail is not an error.
  virtual std::optional<ParsedCalls> Parse(std::string_view section, bool final) const = 0;
};

/// The whole output's calls and content (content: the text outside the
/// calls, or the whole text when a call is malformed; nullopt when empty).
struct ParsedOutput {
  std::optional<std::string> content;
  std::vector<FunctionCall> calls;
};
ParsedOutput ParseOutput(const ToolCallParser& parser, std::string_view text);

/// "auto" is not a format: see DetectToolCallFormat.
absl::StatusOr<ToolCallFormat> ToolCallFormatFromName(std::string_view name);
const char* ToolCallFormatName(ToolCallFormat format);
/// The format a chat template teaches its model (the markers it writes),
/// kNone when it teaches none.
ToolCallFormat DetectToolCallFormat(std::string_view chat_template);
/// nullptr for kNone.
std::unique_ptr<ToolCallParser> MakeToolCallParser(ToolCallFormat format);

}  // namespace kvserve::tool_calls
