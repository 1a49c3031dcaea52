// tokenizer.json "post_processor": what encode(add_special_tokens=True) adds
// around the model's ids, e.g. a BOS token.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace kvserve::hf {

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  /// Adds the special tokens to a single sequence's ids.
  virtual std::vector<int32_t> Process(std::vector<int32_t> ids) const = 0;
};

/// Parses the "post_processor" value (TemplateProcessing with its "single"
/// template, ByteLevel, Sequence); null: nullptr.
absl::StatusOr<std::unique_ptr<PostProcessor>> ParsePostProcessor(const nlohmann::json& value,
                                                                  absl::string_view path);

}  // namespace kvserve::hf
