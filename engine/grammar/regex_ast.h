// A regular expression (regex_to_gbnf.h's syntax) parsed into a tree of
// code-point literals, classes, concatenations, alternations and repeats:
// what both the `regex` constraint and JSON Schema's `pattern` emit from.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/grammar/gbnf_text.h"

namespace kvserve::grammar {

/// The largest {m,n} count accepted; larger ones are refused by name rather
/// than left to blow up the expanded grammar.
inline constexpr int kMaxRegexRepeat = 10000;

struct RegexNode {
  enum class Kind : uint8_t { kEmpty, kLiteral, kClass, kConcat, kAlternate, kRepeat };
  Kind kind = Kind::kEmpty;
  uint32_t code_point = 0;          // kLiteral
  CodePointSet set;                 // kClass: never empty
  std::vector<RegexNode> children;  // kConcat, kAlternate; kRepeat: exactly one
  int min = 0;                      // kRepeat
  int max = -1;                     // kRepeat: -1 is unbounded
};

/// Parses `regex` (UTF-8). ^ and $ are accepted only at the start and end of
/// the whole expression or of a top-level alternative, where they mean
/// nothing: the result always matches whole strings. Errors are
/// INVALID_ARGUMENT "regex: at offset N: ..." (N in bytes).
absl::StatusOr<RegexNode> ParseRegex(std::string_view regex);

}  // namespace kvserve::grammar
