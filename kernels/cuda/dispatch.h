// Turns the runtime head_dim and KV block size into compile-time constants,
// once, at the launch site of each attention kernel. Only the served values
// are instantiated (every extra value costs CI minutes on 2 cores); anything
// else is refused by name, e.g. "unsupported head_dim: 96".
//
//   return DispatchHeadDim(p.shape.head_dim, [&](auto d) {
//     return DispatchBlockSize(p.cache.block_size, [&](auto bs) {
//       return Launch<T, decltype(d)::value, decltype(bs)::value>(p, stream);
//     });
//   });
#pragma once

#include <type_traits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace kvserve::cuda {

template <int kValue>
using IntConstant = std::integral_constant<int, kValue>;

/// Head dims with compiled attention kernels: 64 and 128 are what Llama,
/// Mistral and Qwen2 checkpoints use; 16 and 32 serve the test fixtures.
inline constexpr int kServedHeadDims[] = {16, 32, 64, 128};
/// KV-cache block sizes with compiled attention kernels.
inline constexpr int kServedBlockSizes[] = {16, 32};

template <typename F>
absl::Status DispatchHeadDim(int head_dim, F&& f) {
  switch (head_dim) {
    case 16: return f(IntConstant<16>{});
    case 32: return f(IntConstant<32>{});
    case 64: return f(IntConstant<64>{});
    case 128: return f(IntConstant<128>{});
    default: break;
  }
  return absl::InvalidArgumentError(absl::StrCat("unsupported head_dim: ", head_dim,
                                                 " (the CUDA backend serves 16, 32, 64, 128)"));
}

template <typename F>
absl::Status DispatchBlockSize(int block_size, F&& f) {
  switch (block_size) {
    case 16: return f(IntConstant<16>{});
    case 32: return f(IntConstant<32>{});
    default: break;
  }
  return absl::InvalidArgumentError(absl::StrCat("unsupported block_size: ", block_size,
                                                 " (the CUDA backend serves 16, 32)"));
}

/// The same refusals without instantiating anything: for start-up checks
/// (the server refuses a model it could not serve before loading it).
inline absl::Status CheckServedAttentionShape(int head_dim, int block_size) {
  absl::Status s = DispatchHeadDim(head_dim, [](auto) { return absl::OkStatus(); });
  if (!s.ok()) return s;
  return DispatchBlockSize(block_size, [](auto) { return absl::OkStatus(); });
}

}  // namespace kvserve::cuda
