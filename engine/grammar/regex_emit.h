// Regex trees (regex_ast.h) written as GBNF expressions, for two targets: raw
// text (the `regex` constraint) and the inside of a JSON string (JSON
// Schema's `pattern`), where `"`, `\` and control characters must appear
// escaped.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "engine/grammar/regex_ast.h"

namespace kvserve::grammar {

enum class RegexTarget : uint8_t {
  kText,
  // The characters as a JSON string's contents: each one that JSON requires
  // escaped is written in one canonical form (\" \\ \b \f \n \r \t, else
  // \u00xx with lowercase hex), every other character as itself.
  kJsonStringContent,
};

/// A GBNF expression (no rules needed) matching exactly the strings `node` matches.
std::string EmitRegex(const RegexNode& node, RegexTarget target);

/// The JSON text of one character inside a string literal, in the form above.
std::string JsonEscapedChar(uint32_t cp);

}  // namespace kvserve::grammar
