// tokenizer.json "normalizer": text rewrites applied before pre-tokenization
// (to every piece of the input that is not an added token).
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace kvserve::hf {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual void Normalize(std::string& text) const = 0;
};

/// Parses the "normalizer" value (Sequence, Prepend, Replace, NFC, NFD); null: nullptr.
absl::StatusOr<std::unique_ptr<Normalizer>> ParseNormalizer(const nlohmann::json& value,
                                                            absl::string_view path);

/// Replaces every match of `pattern` in `text` with `content`.
std::string ReplaceAll(const class Pattern& pattern, absl::string_view content,
                       absl::string_view text);

}  // namespace kvserve::hf
