// Where model weights come from: a checkpoint on disk or the built-in
// generator. The loader asks for tensors by their Hugging Face names.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kernels/dtype.h"

namespace kvserve {

/// A host tensor's bytes, borrowed from a mapped file or a generator.
struct TensorData {
  DType dtype = DType::kFloat32;
  std::vector<int64_t> shape;
  const void* data = nullptr;
  size_t bytes = 0;
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
};


class WeightSource {
 public:
  virtual ~WeightSource() = default;
  virtual bool Has(absl::string_view name) const = 0;
  /// The tensor's host data; valid until the next Get on this source.
  virtual absl::StatusOr<TensorData> Get(absl::string_view name) = 0;
  /// Where the weights come from, for messages.
  virtual std::string Describe() const = 0;
  /// Asks Get to return Q8_0 tensors as stored (DType::kQ8_0, rows of
  /// 34-byte blocks) instead of dequantized to float32, for a backend that
  /// keeps Q8_0 weights. Sources that never hold Q8_0 ignore it.
  virtual void SetKeepQ8_0(bool keep) { (void)keep; }
};

}  // namespace kvserve
