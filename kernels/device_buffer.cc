#include "kernels/device_buffer.h"

#include "base/logging.h"

namespace kvserve {

Tensor DeviceBuffer::View(DType dtype, std::initializer_list<int64_t> shape) const {
  Tensor t(data_, dtype, shape);
  KV_CHECK(t.bytes() <= size_) << t.DebugString() << " does not fit in " << size_ << " bytes";
  return t;
}

}  // namespace kvserve
