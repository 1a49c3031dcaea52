// Builds the AST from tokens with jinja2's grammar and operator precedence.
#pragma once

#include <string_view>

#include "engine/text/chat_template/ast.h"

namespace kvserve::chat_template {

/// Throws TemplateError ("line N: expected ..., got ...") on a syntax error,
/// an unknown tag, or an unknown filter or test (jinja2 rejects those when it
/// compiles the template, not when it renders).
Program ParseTemplate(std::string_view source);

}  // namespace kvserve::chat_template
