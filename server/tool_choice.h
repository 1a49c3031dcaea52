// A chat request's tools and tool_choice (both APIs): validates the tool
// definitions, decides what the template is shown and how the output is read
// (tool_calls::ToolCallPlan), and, for tool_choice "required" or a named
// function, sets the JSON-schema constraint that makes the output a valid call:
//
//   named f     json_schema = f's parameters: the whole output is f's arguments
//   "required"  json_schema = [{"name": <const>, "parameters": <its schema>}, ...]
//               (anyOf over the tools; maxItems 1 unless parallel_tool_calls)
//   "auto"      the model's parser (ChatAccess::tool_call_format) reads the text
//   "none"      no tools shown to the template, nothing parsed
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "kvserve/v1/inference.pb.h"
#include "server/chat_mapping.h"
#include "server/tool_calls/tool_call_streamer.h"

namespace kvserve {

inline constexpr int kMaxTools = 128;  // OpenAI's limit

struct ToolCallSetup {
  tool_calls::ToolCallPlan plan;
  std::string tools_json;  // what the template gets as `tools` ("": none)
};

/// INVALID_ARGUMENT names the field: `tools_field` ("tools" over HTTP,
/// "tools_json" over gRPC) with the index and key, "tool_choice", or the
/// conflict with a constraint of the request's own. Sets
/// request.sampling's constraint for "required" and a named function.
absl::StatusOr<ToolCallSetup> PrepareToolCalls(const ChatAccess& chat, v1::ChatRequest& request,
                                               std::string_view tools_field);

}  // namespace kvserve
