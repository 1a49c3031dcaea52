// GBNF (llama.cpp's EBNF dialect) parsed into a byte-level Grammar.
//
//   root   ::= "{" ws pair ("," ws pair)* "}"     # rules: name ::= expression
//   pair   ::= [a-z]+ ":" ws [0-9]{1,3}
//   ws     ::= [ \t\n]*
//
// Literals "..." and classes [...] / [^...] take \n \r \t \\ \" \] \- \xHH
// \uHHHH \UHHHHHHHH escapes; `.` is any character; ( ) groups; | alternates;
// * + ? {m} {m,} {m,n} repeat; # starts a comment. Characters are Unicode code
// points matched as their UTF-8 bytes. The grammar's start is the rule
// `root`. Left recursion (a rule that can reach itself without consuming a
// byte) is refused: the matcher (matcher.h) expands rules top-down.
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>

#include "absl/status/statusor.h"
#include "engine/grammar/grammar.h"

namespace kvserve::grammar {

struct GbnfLimits {
  size_t max_bytes = 1 << 20;       // of the grammar's text
  size_t max_elements = 1 << 20;    // after repetitions are expanded
};

/// INVALID_ARGUMENT naming the line, column and problem ("grammar: line 3,
/// column 9: undefined rule 'valu'"); RESOURCE_EXHAUSTED past `limits`.
absl::StatusOr<std::shared_ptr<const Grammar>> ParseGbnf(std::string_view text,
                                                         const GbnfLimits& limits = {});

/// Whether `input` as a whole matches `gbnf`'s root (for tests and tools).
absl::StatusOr<bool> GbnfMatches(std::string_view gbnf, std::string_view input);

}  // namespace kvserve::grammar
