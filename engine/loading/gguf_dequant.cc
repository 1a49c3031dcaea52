#include "engine/loading/gguf_dequant.h"

#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/loading/ggml_types.h"
#include "kernels/dtype.h"
#include "kernels/quant/dequantize.h"

namespace kvserve {
namespace {

// `nb` blocks (elements for F32/F16/BF16, whose block is 1) of `type`.
void DequantBlocks(GgmlType type, const uint8_t* src, int64_t nb, float* dst) {
  switch (type) {
    case GgmlType::kF32: std::memcpy(dst, src, nb * sizeof(float)); break;
    // The element types convert as everywhere else (checked dtypes: cannot fail).
    case GgmlType::kF16: (void)ConvertToFloat32(src, DType::kFloat16, nb, dst); break;
    case GgmlType::kBF16: (void)ConvertToFloat32(src, DType::kBFloat16, nb, dst); break;
    default:  // a block format: DequantizeGgml checked `supported`
      DequantizeBlocks(*BlockDTypeOfGgml(static_cast<uint32_t>(type)), src, nb, dst);
      break;
  }
}

// Below this many elements a tensor is not worth spreading over threads.
constexpr int64_t kParallelElements = int64_t{1} << 20;

}  // namespace

absl::Status DequantizeGgml(uint32_t type, const uint8_t* src, int64_t numel, float* dst) {
  const std::optional<GgmlTypeInfo> info = LookupGgmlType(type);
  if (!info || !info->supported) {
    return absl::InvalidArgumentError(absl::StrCat("ggml type ", GgmlTypeName(type),
                                                   " is not supported (supported: ",
                                                   SupportedGgmlTypeNames(), ")"));
  }
  if (numel % info->block_size != 0) {
    return absl::InvalidArgumentError(absl::StrCat(numel, " elements are not whole ", info->name,
                                                   " blocks of ", info->block_size));
  }
  const auto t = static_cast<GgmlType>(type);
  const int64_t nb = numel / info->block_size;
  // Blocks are independent: big tensors are split over threads, which only
  // changes who computes each value, never how it rounds.
  const int64_t threads = numel < kParallelElements
                              ? 1
                              : std::clamp<int64_t>(std::thread::hardware_concurrency(), 1, 16);
  if (threads == 1) {
    DequantBlocks(t, src, nb, dst);
    return absl::OkStatus();
  }
  std::vector<std::thread> workers;
  const int64_t per = (nb + threads - 1) / threads;
  for (int64_t b0 = 0; b0 < nb; b0 += per) {
    const int64_t count = std::min(per, nb - b0);
    workers.emplace_back(DequantBlocks, t, src + b0 * info->type_size, count,
                         dst + b0 * info->block_size);
  }
  for (std::thread& w : workers) w.join();
  return absl::OkStatus();
}

}  // namespace kvserve
