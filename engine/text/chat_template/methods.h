// Methods of Python's str, dict and list that templates call
// (`content.strip()`, `message.get('x')`, `tool.items()`). Methods that would
// modify a list or dict fail, as in jinja2's ImmutableSandboxedEnvironment;
// anything else is not a method (an attribute lookup then gives undefined).
#pragma once

#include <optional>
#include <string>

#include "engine/text/chat_template/value.h"

namespace kvserve::chat_template {

/// The bound method `name` of `self`, or nullopt when `self` has none.
std::optional<Value> GetMethod(const Value& self, const std::string& name);

/// Python's str.format with positional and keyword fields ({}, {0}, {name}).
std::string PyFormat(const std::string& format, const CallArgs& args);
/// Python's `format % args` for %s, %d, %i, %f, %r, %% (args: a value or a tuple).
std::string PercentFormat(const std::string& format, const Value& args);

}  // namespace kvserve::chat_template
