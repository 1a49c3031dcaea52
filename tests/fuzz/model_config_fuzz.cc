// libFuzzer target: config.json, then generation_config.json merged into the
// parsed config (the same bytes serve as both). Errors name the field; no input
// may crash or leave a config that fails its own invariants unreported.
#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"
#include "engine/model/model_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view json(reinterpret_cast<const char*>(data), size);
  auto config = kvserve::ParseModelConfig(json);
  if (!config.ok()) return 0;
  kvserve::ModelConfig merged = *config;
  (void)kvserve::MergeGenerationConfig(json, merged);
  return 0;
}
