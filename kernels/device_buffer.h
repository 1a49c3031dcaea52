// Owning handle to memory on a backend's device.
#pragma once

#include <cstddef>
#include <memory>

#include "kernels/tensor.h"

namespace kvserve {

class DeviceBuffer {
 public:
  virtual ~DeviceBuffer() = default;
  void* data() const { return data_; }
  size_t size() const { return size_; }
  /// A view of the whole buffer (or its first bytes) as a tensor.
  Tensor View(DType dtype, std::initializer_list<int64_t> shape) const;

 protected:
  DeviceBuffer(void* data, size_t size) : data_(data), size_(size) {}

 private:
  void* data_;
  size_t size_;
};

using DeviceBufferPtr = std::unique_ptr<DeviceBuffer>;

}  // namespace kvserve
