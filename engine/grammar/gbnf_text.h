// Writing GBNF text (gbnf.h) from code points: the converters (regex,
// JSON Schema) build their grammars as text, and every character they emit
// goes through these helpers so that the output parses whatever the input.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kvserve::grammar {

inline constexpr uint32_t kMaxCodePoint = 0x10FFFF;

/// An inclusive range of Unicode code points.
struct CodePointRange {
  uint32_t lo = 0;
  uint32_t hi = 0;
  bool operator==(const CodePointRange&) const = default;
};

/// A set of code points: sorted, disjoint, non-adjacent ranges (Normalize).
using CodePointSet = std::vector<CodePointRange>;

/// Sorts and merges overlapping or adjacent ranges.
void Normalize(CodePointSet& set);
/// Every code point (surrogates excluded: UTF-8 cannot carry them) not in `set`.
CodePointSet Complement(const CodePointSet& set);
/// The code points in `set` but not in `minus`.
CodePointSet Subtract(const CodePointSet& set, const CodePointSet& minus);
bool Contains(const CodePointSet& set, uint32_t cp);
uint64_t Size(const CodePointSet& set);

/// Decodes one UTF-8 character at text[pos]; returns its length (1..4) and
/// sets `cp`, or 0 when the bytes there are not valid UTF-8.
int DecodeUtf8(std::string_view text, size_t pos, uint32_t& cp);
void AppendUtf8(uint32_t cp, std::string& out);

/// `cp` as it may appear inside a GBNF "..." literal or [...] class: printable
/// ASCII as itself (quote, backslash and class metacharacters escaped), the
/// rest as \n \r \t \xHH \uHHHH \UHHHHHHHH.
std::string EscapeCodePoint(uint32_t cp, bool in_class);

/// A GBNF literal "..." matching exactly the code points of `text`, which
/// must be valid UTF-8 (invalid bytes are written as \xHH, matching that code point).
std::string GbnfLiteral(std::string_view text);
std::string GbnfLiteralOf(const std::vector<uint32_t>& code_points);

/// A GBNF character class matching `set` (non-empty): [..] or, when shorter,
/// [^..].
std::string GbnfClass(const CodePointSet& set);

}  // namespace kvserve::grammar
