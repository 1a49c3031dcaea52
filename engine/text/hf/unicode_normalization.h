// Unicode canonical normalization (NFD, NFC) for the NFC/NFD normalizers
// (Qwen2's tokenizer.json uses NFC). Tables are generated from Unicode data
// by gen_nfc_tables.py; Hangul syllables are composed algorithmically.
#pragma once

#include <string>

#include "absl/strings/string_view.h"

namespace kvserve::hf {

/// Canonical decomposition with canonical ordering. `text` is valid UTF-8.
std::string ToNfd(absl::string_view text);
/// Canonical decomposition, then canonical composition.
std::string ToNfc(absl::string_view text);

}  // namespace kvserve::hf
