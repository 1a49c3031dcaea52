// Where model weights come from: a checkpoint on disk or the built-in
// generator. The loader asks for tensors by their Hugging Face names.
#pragma once

#include <cstdint>
#include <memory>
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
  /// Set when `data` stays valid for as long as this handle lives (a mapped
  /// file's bytes, served as stored): a backend that computes from host
  /// memory may keep the pointer instead of copying (Backend::BorrowsHostWeights).
  std::shared_ptr<const void> owner;
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
  /// Asks Get to return tensors stored in these block formats as stored
  /// (rows of whole blocks) instead of dequantized to float32, for a backend
  /// that keeps them (Backend::MatrixWeightDType). Sources that never hold
  /// block formats ignore it.
  virtual void SetKeptBlockDTypes(std::vector<DType> dtypes) { (void)dtypes; }
};

}  // namespace kvserve
