#include "engine/text/hf/piece.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/text/hf/json_fields.h"

namespace kvserve::hf {

absl::StatusOr<SplitBehavior> ParseSplitBehavior(const std::string& name,
                                                 absl::string_view path) {
  if (name == "Removed") return SplitBehavior::kRemoved;
  if (name == "Isolated") return SplitBehavior::kIsolated;
  if (name == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (name == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (name == "Contiguous") return SplitBehavior::kContiguous;
  return FieldError(path, absl::StrCat("unknown split behavior \"", name, "\""));
}

size_t Utf8CharLength(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (lead < 0xE0) return 2;
  if (lead < 0xF0) return 3;
  return 4;
}

namespace {

struct Span {
  size_t begin, end;
  bool is_match;
};

// The whole text as alternating unmatched/matched spans.
std::vector<Span> Cover(size_t size, const std::vector<Match>& matches, bool invert) {
  std::vector<Span> spans;
  size_t previous = 0;
  for (const auto& [begin, end] : matches) {
    if (previous != begin) spans.push_back({previous, begin, invert});
    spans.push_back({begin, end, !invert});
    previous = end;
  }
  if (previous != size) spans.push_back({previous, size, invert});
  return spans;
}

}  // namespace

std::vector<Piece> SplitPiece(const Piece& piece, const std::vector<Match>& matches,
                              SplitBehavior behavior, bool invert) {
  const std::vector<Span> spans = Cover(piece.text.size(), matches, invert);
  std::vector<Span> parts;  // kept spans
  bool previous_match = false;
  switch (behavior) {
    case SplitBehavior::kIsolated:
      parts = spans;
      break;
    case SplitBehavior::kRemoved:
      for (const Span& s : spans) {
        if (!s.is_match) parts.push_back(s);
      }
      break;
    case SplitBehavior::kContiguous:
      for (const Span& s : spans) {
        if (!parts.empty() && s.is_match == previous_match) {
          parts.back().end = s.end;
        } else {
          parts.push_back(s);
        }
        previous_match = s.is_match;
      }
      break;
    case SplitBehavior::kMergedWithPrevious:
      for (const Span& s : spans) {
        if (!parts.empty() && s.is_match && !previous_match) {
          parts.back().end = s.end;
        } else {
          parts.push_back(s);
        }
        previous_match = s.is_match;
      }
      break;
    case SplitBehavior::kMergedWithNext:
      for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
        if (!parts.empty() && it->is_match && !previous_match) {
          parts.back().begin = it->begin;
        } else {
          parts.push_back(*it);
        }
        previous_match = it->is_match;
      }
      std::reverse(parts.begin(), parts.end());
      break;
  }
  std::vector<Piece> out;
  for (const Span& s : parts) {
    if (s.begin == s.end) continue;
    Piece p;
    p.text = piece.text.substr(s.begin, s.end - s.begin);
    p.at_input_start = piece.at_input_start && s.begin == 0;
    out.push_back(std::move(p));
  }
  return out;
}

void SplitEach(std::vector<Piece>& pieces,
               const std::function<std::vector<Piece>(const Piece&)>& split) {
  std::vector<Piece> out;
  out.reserve(pieces.size());
  for (Piece& piece : pieces) {
    if (piece.is_token()) {
      out.push_back(std::move(piece));
      continue;
    }
    for (Piece& part : split(piece)) {
      if (part.is_token() || !part.text.empty()) out.push_back(std::move(part));
    }
  }
  pieces = std::move(out);
}

}  // namespace kvserve::hf
