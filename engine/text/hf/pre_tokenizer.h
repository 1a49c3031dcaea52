// tokenizer.json "pre_tokenizer": splits normalized text into the words the
// model tokenizes one by one (and maps bytes to characters for byte-level BPE).
#pragma once

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/text/hf/piece.h"
#include "nlohmann/json.hpp"

namespace kvserve::hf {

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  /// Splits and rewrites the non-token pieces in place.
  virtual void PreTokenize(std::vector<Piece>& pieces) const = 0;
};

/// Parses the "pre_tokenizer" value (Sequence, Split, ByteLevel, Metaspace,
/// Digits); null: nullptr.
absl::StatusOr<std::unique_ptr<PreTokenizer>> ParsePreTokenizer(const nlohmann::json& value,
                                                                absl::string_view path);

/// GPT-2's word-splitting regex, which ByteLevel uses when "use_regex" is true.
inline constexpr absl::string_view kGpt2Regex =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

}  // namespace kvserve::hf
