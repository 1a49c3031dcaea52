#include "kernels/quant/block_formats.h"

namespace kvserve {

BlockFormat BlockFormatOf(DType dtype) {
  switch (dtype) {
    case DType::kQ8_0: return {128, false, false};
    case DType::kQ4_0: return {8, false, false};
    case DType::kQ4_1: return {0, true, false};
    case DType::kQ5_0: return {16, false, false};
    case DType::kQ5_1: return {0, true, false};
    case DType::kQ4_K: return {0, true, true};
    case DType::kQ5_K: return {0, true, true};
    case DType::kQ6_K: return {32, false, true};
    case DType::kQ2_K: return {0, true, true};
    case DType::kQ3_K: return {4, false, true};
    default: return {};
  }
}

}  // namespace kvserve
