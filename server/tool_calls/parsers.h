// The parsers, one per file (tool_call_parser.h describes each format).
#pragma once

#include <memory>

#include "server/tool_calls/tool_call_parser.h"

namespace kvserve::tool_calls {

std::unique_ptr<ToolCallParser> MakeLlama3JsonParser();
std::unique_ptr<ToolCallParser> MakeHermesParser();
std::unique_ptr<ToolCallParser> MakeMistralParser();

}  // namespace kvserve::tool_calls
