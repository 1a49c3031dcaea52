// Where model weights come from: a checkpoint on disk or the built-in
// generator. The loader asks for tensors by their Hugging Face names.
#pragma once

#include <string>
#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"
#include "engine/safetensors.h"

namespace kvserve {

class WeightSource {
 public:
  virtual ~WeightSource() = default;
  virtual bool Has(absl::string_view name) const = 0;
  /// The tensor's host data; valid until the next Get on this source.
  virtual absl::StatusOr<TensorData> Get(absl::string_view name) = 0;
  /// Where the weights come from, for messages.
  virtual std::string Describe() const = 0;
};

}  // namespace kvserve
