// jinja2's built-in tests (`x is defined`, `x is divisibleby 3`, ...).
#pragma once

#include <string_view>

#include "engine/text/chat_template/value.h"

namespace kvserve::chat_template {

/// Every test name jinja2 knows: the parser rejects others.
bool IsKnownTest(std::string_view name);
bool RunTest(Interpreter& interp, std::string_view name, const Value& input, CallArgs& args);

}  // namespace kvserve::chat_template
