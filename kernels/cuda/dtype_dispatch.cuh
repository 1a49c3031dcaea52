// Runtime DType → the CUDA storage type, for the launch functions in .cu
// files (the tag's type is the element type: `using T = decltype(tag);`).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "kernels/dtype.h"

namespace kvserve::cuda {

template <typename F>
absl::Status DispatchFloat(DType dtype, absl::string_view op, F&& f) {
  switch (dtype) {
    case DType::kFloat32: return f(float{});
    case DType::kBFloat16: return f(__nv_bfloat16{});
    case DType::kFloat16: return f(__half{});
    default: break;
  }
  return absl::InvalidArgumentError(absl::StrCat(op, ": unsupported dtype ", DTypeName(dtype)));
}

}  // namespace kvserve::cuda
