// Helpers the parsers share: where a JSON value ends (nested objects and
// strings with escaped braces included, which regular expressions get
// wrong), and reading one call object.
#pragma once

#include <optional>
#include <string_view>

#include "server/tool_calls/tool_call.h"

namespace kvserve::tool_calls {

/// For text[begin] == '{' or '[': the index just past the matching closing
/// bracket, or npos when the text ends first. Does not validate the JSON.
size_t JsonBracketEnd(std::string_view text, size_t begin);

/// {"name": string, <args_key>: object or JSON string} → a call; nullopt
/// for anything else. Either key spelling ("arguments" or "parameters") is
/// taken, since models mix them up.
std::optional<FunctionCall> CallFromJson(std::string_view json_text);

/// Index of the first non-whitespace character at or after `pos`.
size_t SkipSpace(std::string_view text, size_t pos);
std::string_view Trim(std::string_view text);

/// The start of the longest suffix of `text` that is a proper prefix of
/// `marker` (a marker the next tokens may complete), or npos.
size_t PartialMarkerStart(std::string_view text, std::string_view marker);

}  // namespace kvserve::tool_calls
