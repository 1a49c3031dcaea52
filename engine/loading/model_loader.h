// Opens what the server serves: a Hugging Face checkpoint directory, a GGUF
// file (docs/gguf.md), or the built-in default model when no path is given.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "engine/model/model_config.h"
#include "engine/model/weight_source.h"
#include "engine/text/chat_template_source.h"
#include "engine/text/tokenizer.h"

namespace kvserve {

struct ModelSource {
  std::string name;  // directory base name, GGUF file stem, or the default model's name
  ModelConfig config;
  std::unique_ptr<WeightSource> weights;
  std::unique_ptr<Tokenizer> tokenizer;  // null when the model has none
  // The chat template, when the model ships one (chat is refused otherwise).
  std::optional<ChatTemplateSource> chat_template;
};

/// `dir` empty: the built-in default model (random weights, byte tokenizer).
/// A regular file ending in .gguf (or starting with the GGUF magic): GGUF.
absl::StatusOr<ModelSource> OpenModelSource(const std::string& dir);

}  // namespace kvserve
