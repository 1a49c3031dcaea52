// A function call the model made, as OpenAI's API returns it
// (`tool_calls[i]`: id, type "function", function {name, arguments}).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kvserve::tool_calls {

struct ToolCall {
  std::string id;         // "call_" + 24 random alphanumerics
  std::string name;       // the function's name
  std::string arguments;  // a JSON text (an object for well-formed calls)

  bool operator==(const ToolCall&) const = default;
};

/// A call as a parser finds it in the text, before it gets an id.
struct FunctionCall {
  std::string name;
  std::string arguments;  // JSON text

  bool operator==(const FunctionCall&) const = default;
};

inline constexpr int kToolCallIdRandomChars = 24;

/// "call_" + kToolCallIdRandomChars characters from [0-9A-Za-z], from the
/// kernel's CSPRNG: ids never repeat across requests, restarts or replicas.
std::string NewToolCallId();

}  // namespace kvserve::tool_calls
