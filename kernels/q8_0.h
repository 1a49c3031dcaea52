// ggml's Q8_0 block format, kept as the weight storage of the CPU backend
// (docs/cpu_weight_dtypes.md): 32 consecutive weights of a row share one
// float16 scale d, each weight is d · q with q an int8. A [N, K] Q8_0 matrix
// is N rows of K / 32 blocks, exactly as a GGUF file stores it.
#pragma once

#include <cstdint>

namespace kvserve {

inline constexpr int kQ8_0BlockSize = 32;

struct BlockQ8_0 {
  uint16_t scale;  // IEEE binary16
  int8_t q[kQ8_0BlockSize];
};
static_assert(sizeof(BlockQ8_0) == 34, "ggml's block_q8_0 is 34 bytes");

/// dst[i] = d · q for `count` weights (a multiple of 32). d · q is exact in
/// float32 (11 + 8 significant bits), so this is the stored value itself.
void DequantizeQ8_0(const BlockQ8_0* src, int64_t count, float* dst);

/// ggml's reference quantize_row_q8_0: per block d = max|x| / 127, q =
/// round(x / d). For tests and for writing fixtures; `count` a multiple of 32.
void QuantizeQ8_0(const float* src, int64_t count, BlockQ8_0* dst);

}  // namespace kvserve
