// Splits a template into text and tag tokens the way jinja2's lexer does with
// trim_blocks and lstrip_blocks on: `{%-`/`-%}` strip whitespace, `{%+`/`+%}`
// keep it, a block or comment tag alone on its line takes the line's
// indentation and newline with it, and one trailing newline of the source is
// dropped (keep_trailing_newline=False).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kvserve::chat_template {

enum class TokenType {
  kText,        // template data between tags
  kPrintBegin,  // {{
  kPrintEnd,    // }}
  kBlockBegin,  // {%
  kBlockEnd,    // %}
  kName,
  kString,  // value holds the unescaped string
  kInteger,
  kFloat,
  kOperator,  // value holds the operator: "+", "//", "==", "(", ...
  kEnd,
};

struct Token {
  TokenType type;
  std::string value;
  int line;
};

/// Throws TemplateError ("line N: ...") on an unterminated tag, comment or
/// string, or a character no token starts with.
std::vector<Token> Tokenize(std::string_view source);

/// How a token reads in an error message: "'endfor'", "end of statement block".
std::string Describe(const Token& token);

}  // namespace kvserve::chat_template
