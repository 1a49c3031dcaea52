// A piece of the input on its way through normalization and pre-tokenization,
// and the ways Hugging Face splits a piece around pattern matches.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/text/hf/pattern.h"

namespace kvserve::hf {

struct Piece {
  std::string text;
  // Whether the piece starts at offset 0 of the original input. Metaspace's
  // prepend_scheme "first" adds its ▁ only to such a piece (e.g. not to the text
  // right after a leading special token).
  bool at_input_start = false;
  // An added token matched in the input: already a token, so no further
  // normalization, pre-tokenization or model pass touches it.
  int32_t added_id = -1;

  bool is_token() const { return added_id >= 0; }
};

/// SplitDelimiterBehavior: what happens to the matched parts.
enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

/// Parses "Removed", "Isolated", ...; errors name `path`.
absl::StatusOr<SplitBehavior> ParseSplitBehavior(const std::string& name, absl::string_view path);

/// Splits `piece` around `matches` (sorted, non-overlapping byte ranges). With
/// `invert`, the parts between matches are treated as the matches. Empty parts
/// are dropped, as Hugging Face's PreTokenizedString does.
std::vector<Piece> SplitPiece(const Piece& piece, const std::vector<Match>& matches,
                              SplitBehavior behavior, bool invert);

/// Replaces every non-token piece by what `split` makes of it, dropping empty
/// results. Token pieces pass through.
void SplitEach(std::vector<Piece>& pieces,
               const std::function<std::vector<Piece>(const Piece&)>& split);

/// Byte length of the UTF-8 character whose first byte is `lead` (valid input).
size_t Utf8CharLength(unsigned char lead);

}  // namespace kvserve::hf
