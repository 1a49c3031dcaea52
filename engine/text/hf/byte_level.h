// GPT-2's reversible byte ↔ character mapping: each byte becomes one printable
// character (printable Latin-1 bytes map to themselves, the others to U+0100
// upward), so byte-level BPE vocabularies are plain strings.
#pragma once

#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace kvserve::hf {

/// The UTF-8 encoding of the character that stands for `byte`.
const std::string& ByteToChar(unsigned char byte);

/// `text`'s bytes, each replaced by its character.
std::string BytesToChars(absl::string_view text);

/// The byte a character (a Unicode code point) stands for, if any.
std::optional<unsigned char> CharToByte(char32_t c);

/// Decodes the next code point of valid UTF-8 `text` at `*pos` and advances.
char32_t NextCodePoint(absl::string_view text, size_t* pos);

/// Appends the UTF-8 encoding of `c`.
void AppendUtf8(char32_t c, std::string* out);

}  // namespace kvserve::hf
