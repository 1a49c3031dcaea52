// What a Split pre-tokenizer or a Replace normalizer/decoder searches for: a
// literal string or a regular expression (PCRE2, UTF + Unicode properties).
//
// Hugging Face tokenizers matches regexes with Oniguruma. PCRE2 agrees with it
// on the constructs tokenizer patterns use (\p{L}, \p{N}, (?i:...), lookahead,
// possessive and lazy quantifiers) except one: PCRE2's \s also matches U+180E
// (Mongolian vowel separator, a space only before Unicode 6.3) and Oniguruma's
// does not. Patterns are rewritten so that \s and \S do the same here.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace kvserve::hf {

/// A match as byte offsets [begin, end) into the searched text.
using Match = std::pair<size_t, size_t>;

class Pattern {
 public:
  /// A literal string; must not be empty.
  static absl::StatusOr<std::unique_ptr<Pattern>> Literal(absl::string_view text);
  /// A regular expression in Oniguruma syntax (as tokenizer.json stores it).
  static absl::StatusOr<std::unique_ptr<Pattern>> Regex(absl::string_view regex);
  ~Pattern();

  /// Non-overlapping matches, left to right. `text` must be valid UTF-8. An
  /// empty match right where the previous match ended is skipped, as
  /// Oniguruma's iterator does.
  std::vector<Match> FindAll(absl::string_view text) const;

 private:
  Pattern() = default;

  std::string literal_;
  struct Compiled;
  std::unique_ptr<Compiled> regex_;  // null for a literal
};

/// Parses a tokenizer.json pattern, {"String": "..."} or {"Regex": "..."}; errors name `path`.
absl::StatusOr<std::unique_ptr<Pattern>> ParsePattern(const nlohmann::json& value,
                                                      absl::string_view path);

/// Rewrites an Oniguruma pattern for PCRE2 (\s and \S spelled out). Exposed for tests.
std::string OnigurumaToPcre2(absl::string_view regex);

}  // namespace kvserve::hf
