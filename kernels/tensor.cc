#include "kernels/tensor.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/logging.h"

namespace kvserve {

Tensor::Tensor(void* data_ptr, DType type, std::initializer_list<int64_t> shape)
    : data(data_ptr), dtype(type), rank(static_cast<int>(shape.size())) {
  KV_CHECK(rank <= kMaxTensorRank) << "rank " << rank;
  int i = 0;
  for (int64_t d : shape) dims[i++] = d;
}

int64_t Tensor::numel() const {
  if (rank == 0) return data ? 1 : 0;
  int64_t n = 1;
  for (int i = 0; i < rank; ++i) n *= dims[i];
  return n;
}

int64_t Tensor::row_elems() const {
  int64_t n = 1;
  for (int i = 1; i < rank; ++i) n *= dims[i];
  return n;
}

Tensor Tensor::Rows(int64_t begin, int64_t count) const {
  KV_CHECK(rank >= 1 && begin >= 0 && count >= 0 && begin + count <= dims[0])
      << DebugString() << " rows " << begin << "+" << count;
  Tensor out = *this;
  out.data = static_cast<char*>(data) + DTypeBytes(dtype, begin * row_elems());
  out.dims[0] = count;
  return out;
}

Tensor Tensor::Reshape(std::initializer_list<int64_t> shape) const {
  Tensor out(data, dtype, shape);
  KV_CHECK(out.numel() == numel()) << DebugString() << " cannot be reshaped";
  return out;
}

std::string Tensor::DebugString() const {
  return absl::StrCat(DTypeName(dtype), "[",
                      absl::StrJoin(dims.begin(), dims.begin() + rank, ", "), "]");
}

}  // namespace kvserve
