// Python str semantics over UTF-8 strings: Python indexes, slices, strips and
// splits by code point, and its whitespace includes Unicode spaces.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kvserve::chat_template {

std::vector<std::string> SplitCodepoints(std::string_view s);
size_t CountCodepoints(std::string_view s);
/// Byte offsets of each code point's start, plus s.size() at the end.
std::vector<size_t> CodepointOffsets(std::string_view s);

/// str.strip/lstrip/rstrip: `chars` absent strips Python whitespace.
std::string PyStrip(std::string_view s, const std::optional<std::string>& chars, bool left,
                    bool right);
/// str.split(sep, maxsplit) (sep absent: runs of whitespace); rsplit when
/// from_right.
std::vector<std::string> PySplit(std::string_view s, const std::optional<std::string>& sep,
                                 int64_t maxsplit, bool from_right);
/// str.splitlines() without keepends.
std::vector<std::string> PySplitLines(std::string_view s);
/// str.replace(old, new, count) (count < 0: all).
std::string PyReplace(std::string_view s, std::string_view old_text, std::string_view new_text,
                      int64_t count);
/// Unicode full case mapping, as Python: "ß".upper() is "SS".
std::string PyUpper(std::string_view s);
std::string PyLower(std::string_view s);
/// str.capitalize(): first character upper, the rest lower.
std::string PyCapitalize(std::string_view s);
/// str.title(): titlecase after an uncased character, lowercase after a cased one.
std::string PyTitle(std::string_view s);
/// str.islower()/isupper(): at least one cased character, none of the other case.
bool PyIsLower(std::string_view s);
bool PyIsUpper(std::string_view s);
/// str.isalpha() (letters) and str.isdigit() (decimal and digit numerals).
bool PyIsAlpha(std::string_view s);
bool PyIsDigit(std::string_view s);
bool IsPyWhitespace(uint32_t codepoint);

}  // namespace kvserve::chat_template
