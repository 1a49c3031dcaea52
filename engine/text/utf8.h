// UTF-8 helpers for decoding and streaming text.
#pragma once

#include <string>
#include "absl/strings/string_view.h"

namespace kvserve {

/// Replaces every maximal invalid byte sequence with U+FFFD, exactly as
/// Python's bytes.decode("utf-8", errors="replace") does (and so as Hugging
/// Face tokenizers' decoders do).
std::string SanitizeUtf8(absl::string_view bytes);

/// Whether `text` ends with U+FFFD (a character still incomplete when decoded
/// from a prefix of the tokens).
bool EndsWithReplacementChar(absl::string_view text);

/// Length of the valid UTF-8 sequence starting at text[0] (1..4), or 0 if the
/// bytes there do not start a valid, complete sequence.
int Utf8SequenceLength(absl::string_view text);

}  // namespace kvserve
