// Turns a choice's output text, as it streams, into OpenAI's content and
// tool-call deltas, for one of the tool_choice modes:
//
//   kOff       all text is content
//   kParse     tool_choice "auto": content streams until the model's parser
//              sees a call's marker (or what may become one: held back), then
//              each call is emitted whole (id, name, arguments) once it closes
//   kNamed     tool_choice names a function: the constrained output is that
//              call's arguments, streamed as fragments after a first delta
//              with the id and the name
//   kRequired  tool_choice "required": the constrained output is a JSON array
//              of {"name", "parameters"}; each element is emitted once it closes
//
// A call that does not parse leaves its text as content. Not thread-safe
// (one per choice, fed in order).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "server/tool_calls/tool_call.h"
#include "server/tool_calls/tool_call_parser.h"

namespace kvserve::tool_calls {

enum class ToolCallMode { kOff, kParse, kNamed, kRequired };

/// What a request's tools and tool_choice make of its output.
struct ToolCallPlan {
  ToolCallMode mode = ToolCallMode::kOff;
  ToolCallFormat format = ToolCallFormat::kNone;  // kParse: the model's format
  std::string function;                           // kNamed: the function's name
};

/// One update of the call at `index` (OpenAI's delta.tool_calls[i]).
struct CallDelta {
  int index = 0;
  bool first = false;     // the call's first delta: carries id and name
  std::string id;         // when first
  std::string name;       // when first
  std::string arguments;  // a fragment, appended to the call's arguments so far
};

struct StreamDelta {
  std::string content;
  std::vector<CallDelta> calls;
  bool empty() const { return content.empty() && calls.empty(); }
};

class ToolCallStreamer {
 public:
  explicit ToolCallStreamer(ToolCallPlan plan, std::function<std::string()> new_id = NewToolCallId);
  ~ToolCallStreamer();

  StreamDelta Add(std::string_view text);
  /// The output ended: whatever was held back.
  StreamDelta Finish();

  /// The calls emitted so far, arguments whole as far as they came.
  const std::vector<ToolCall>& calls() const { return calls_; }
  /// How many of calls() have their whole arguments (a named function's one
  /// call only once the output ended).
  size_t complete_calls() const {
    return plan_.mode == ToolCallMode::kNamed && !finished_ ? 0 : calls_.size();
  }

 private:
  void Emit(FunctionCall call, StreamDelta& out);
  void EmitClosed(const std::vector<FunctionCall>& calls, StreamDelta& out);
  StreamDelta AddParse(bool final);
  StreamDelta AddRequired(bool final);

  ToolCallPlan plan_;
  std::function<std::string()> new_id_;
  std::unique_ptr<ToolCallParser> parser_;  // kParse
  std::string text_;                        // the whole output so far
  size_t content_sent_ = 0;                 // bytes of text_ sent as content
  size_t section_ = std::string::npos;      // kParse: where the calls begin
  std::vector<ToolCall> calls_;
  bool finished_ = false;
};

/// Whole output → content and calls, for a non-streamed reply.
struct ToolCallOutput {
  std::optional<std::string> content;  // nullopt: OpenAI's "content": null
  std::vector<ToolCall> calls;
};
ToolCallOutput ParseWholeOutput(const ToolCallPlan& plan, std::string_view text,
                                const std::function<std::string()>& new_id = NewToolCallId);

}  // namespace kvserve::tool_calls
