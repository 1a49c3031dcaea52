// Turns the runtime head_dim and KV block size into compile-time constants,
// once, at the launch site of each attention kernel. Only the served values
// are instantiated (every extra value costs CI minutes on 2 cores); anything
// else is refused by name, e.g. "unsupported head_dim: 80".
//
//   return DispatchHeadDim(p.shape.head_dim, [&](auto d) {
//     return DispatchBlockSize(p.cache.block_size, [&](auto bs) {
//       return Launch<T, decltype(d)::value, decltype(bs)::value>(p, stream);
//     });
//   });
#pragma once

#include <string>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace kvserve::cuda {

template <int kValue>
using IntConstant = std::integral_constant<int, kValue>;

/// Whether the attention kernels' warp layout covers every dim of a head of
/// `head_dim`: lane l owns dims [l·D/32, (l+1)·D/32) of the output, so D must
/// be a multiple of 32 (at most 32 lanes × D/32 dims) or a divisor of 32 (one
/// dim per lane, lanes past D idle); rows are read as 16-byte vectors of up
/// to 8 elements and scored 4 floats at a time, so D must be a multiple of 8.
/// 80 fails the first rule: 80/32 = 2 dims per lane would take 40 lanes, and
/// a warp has 32, so dims 64..79 would silently never be computed.
constexpr bool IsAttentionHeadDim(int head_dim) {
  return head_dim > 0 && head_dim % 8 == 0 &&
         (head_dim % 32 == 0 || 32 % head_dim == 0);
}

/// Head dims with compiled attention kernels: 64, 96 (Phi-style) and 128 are
/// what checkpoints use; 16 and 32 serve the test fixtures.
inline constexpr int kServedHeadDims[] = {16, 32, 64, 96, 128};
/// KV-cache block sizes with compiled attention kernels.
inline constexpr int kServedBlockSizes[] = {16, 32};

/// "16, 32, 64, 96, 128": for messages.
inline std::string ServedHeadDimsText() { return absl::StrJoin(kServedHeadDims, ", "); }

namespace internal {
template <int kHeadDim, typename F>
absl::Status CallWithHeadDim(F&& f) {
  // Adding an unsupported value to the switch below stops the build here
  // instead of computing part of every head.
  static_assert(IsAttentionHeadDim(kHeadDim), "the attention kernels cannot serve this head_dim");
  return f(IntConstant<kHeadDim>{});
}
}  // namespace internal

template <typename F>
absl::Status DispatchHeadDim(int head_dim, F&& f) {
  // Keep in step with kServedHeadDims (cuda_host_test checks both ways).
  switch (head_dim) {
    case 16: return internal::CallWithHeadDim<16>(f);
    case 32: return internal::CallWithHeadDim<32>(f);
    case 64: return internal::CallWithHeadDim<64>(f);
    case 96: return internal::CallWithHeadDim<96>(f);
    case 128: return internal::CallWithHeadDim<128>(f);
    default: break;
  }
  return absl::InvalidArgumentError(absl::StrCat("unsupported head_dim: ", head_dim,
                                                 " (the CUDA backend serves ",
                                                 ServedHeadDimsText(), ")"));
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
