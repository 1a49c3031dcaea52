// A Hugging Face checkpoint directory: config.json, one model.safetensors or
// several shards listed in model.safetensors.index.json, generation_config.json
// and tokenizer.json when present.
#pragma once

#include "absl/strings/string_view.h"
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/loading/safetensors.h"
#include "engine/model/model_config.h"
#include "engine/model/weight_source.h"

namespace kvserve {

class Checkpoint final : public WeightSource {
 public:
  /// Reads the config and maps every safetensors file of `dir`.
  static absl::StatusOr<std::unique_ptr<Checkpoint>> Open(const std::string& dir);

  const ModelConfig& config() const { return config_; }
  const std::string& dir() const { return dir_; }

  bool Has(absl::string_view name) const override;
  absl::StatusOr<TensorData> Get(absl::string_view name) override;
  std::string Describe() const override { return dir_; }

 private:
  std::string dir_;
  ModelConfig config_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, const TensorData*, std::less<>> index_;
};

/// Reads a whole small file (config, index, tokenizer) into a string.
absl::StatusOr<std::string> ReadTextFile(const std::string& path, size_t max_bytes = 256u << 20);

}  // namespace kvserve
