// jinja2's built-in filters (and transformers' tojson), with Python semantics.
#pragma once

#include <string_view>

#include "engine/text/chat_template/value.h"

namespace kvserve::chat_template {

/// Every filter name jinja2 knows: the parser rejects others, as jinja2 does
/// when it compiles a template. A known but unimplemented one fails at render.
bool IsKnownFilter(std::string_view name);
Value RunFilter(Interpreter& interp, std::string_view name, const Value& input, CallArgs& args);

}  // namespace kvserve::chat_template
