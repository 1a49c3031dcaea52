// Non-owning, contiguous, row-major view of device (or host) memory.
//
// Ops take Tensors by value; memory is owned elsewhere (a DeviceBuffer held by
// the model, the KV cache or the step workspace). A Tensor never frees.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "kernels/dtype.h"

namespace kvserve {

inline constexpr int kMaxTensorRank = 4;

struct Tensor {
  void* data = nullptr;
  DType dtype = DType::kFloat32;
  int rank = 0;
  std::array<int64_t, kMaxTensorRank> dims{};

  Tensor() = default;
  Tensor(void* data_ptr, DType type, std::initializer_list<int64_t> shape);

  bool empty() const { return data == nullptr; }
  int64_t dim(int i) const { return dims[i < 0 ? rank + i : i]; }
  int64_t numel() const;
  size_t bytes() const { return DTypeBytes(dtype, numel()); }
  /// Elements per index of dim 0 (the product of the other dims).
  int64_t row_elems() const;

  template <typename T>
  T* as() const {
    return static_cast<T*>(data);
  }

  /// Rows [begin, begin + count) along dim 0, sharing the memory.
  Tensor Rows(int64_t begin, int64_t count) const;
  /// The same memory with another shape of the same element count.
  Tensor Reshape(std::initializer_list<int64_t> shape) const;

  /// "bfloat16[8, 128]", for error messages.
  std::string DebugString() const;
};

}  // namespace kvserve
