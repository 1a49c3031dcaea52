// Writes safetensors checkpoints: one model.safetensors, or shards
// model-0000i-of-0000n.safetensors with model.safetensors.index.json, as
// Hugging Face's save_pretrained does. Tensor data is produced in chunks by a
// callback, so multi-GB checkpoints are written without holding them in RAM.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "kernels/dtype.h"

namespace kvserve {

struct TensorToWrite {
  std::string name;
  DType dtype = DType::kBFloat16;  // float32, float16 or bfloat16
  std::vector<int64_t> shape;
  /// Writes float32 elements [offset, offset + count) into `out`.
  std::function<void(int64_t offset, int64_t count, float* out)> fill;
};

/// Writes `tensors` into `dir` (which must exist). `max_shard_bytes` 0 writes
/// one file; otherwise tensors are grouped in order into shards of at most
/// that size (a tensor larger than it gets a shard of its own).
absl::Status WriteSafetensors(const std::string& dir, const std::vector<TensorToWrite>& tensors,
                              int64_t max_shard_bytes = 0);

}  // namespace kvserve
