// Regular expressions to GBNF (gbnf.h), for the `regex` constraint and the
// JSON Schema `pattern` keyword. Syntax: ECMAScript's regular part: literals,
// . [..] [^..] \d \w \s \D \W \S escapes, ( ) (?: ) groups, |, * + ? {m}
// {m,} {m,n} (lazy forms accepted, same language), ^ and $ only at the ends
// (the whole output always matches). Back-references and look-around are
// refused: they are not regular. `.` is any character but \n (as Python's
// re, which jsonschema uses). Details: docs/structured_outputs.md.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace kvserve::grammar {

/// A GBNF expression (no rule name) matching what `regex` matches; rules it
/// needs are appended to `extra_rules` with names starting with `prefix`.
absl::StatusOr<std::string> RegexToGbnfExpression(std::string_view regex, std::string_view prefix,
                                                  std::string& extra_rules);

/// A whole grammar: "root ::= <expression>" plus its rules. Errors are
/// INVALID_ARGUMENT naming the offset ("regex: at offset 4: unbalanced ')'").
absl::StatusOr<std::string> RegexToGbnf(std::string_view regex);

}  // namespace kvserve::grammar
