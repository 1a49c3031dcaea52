// ModelConfig from a GGUF file's `<architecture>.*` metadata (llama.cpp's key
// names), for the architectures kvserve serves: `llama` (Llama 1-3 and
// Mistral-style files) and `qwen2`. Anything else is refused by name.
#pragma once

#include "absl/status/statusor.h"
#include "engine/loading/gguf_file.h"
#include "engine/model/model_config.h"

namespace kvserve {

absl::StatusOr<ModelConfig> GgufModelConfig(const GgufFile& file);

}  // namespace kvserve
