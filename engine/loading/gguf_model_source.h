// Opens a .gguf file as a ModelSource: config, weights, tokenizer and chat
// template all come from the one file.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "engine/loading/model_loader.h"

namespace kvserve {

/// Whether `path` names a GGUF file: a name ending in .gguf (present or not),
/// or a regular file starting with the GGUF magic.
bool IsGgufPath(const std::string& path);

absl::StatusOr<ModelSource> OpenGgufModelSource(const std::string& path);

}  // namespace kvserve
