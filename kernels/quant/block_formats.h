// What the quantized products need to know about each ggml block format
// (kernels/quant/dequantize.cc has the byte layouts). Every format is read as
// unsigned codes u with w = s · (u - offset) + b, where s (and b, for the
// formats with a minimum) is shared by 16 or 32 consecutive weights:
//
//   format  block  u bits  offset  s per       b
//   Q8_0     32     8       128    32: d       -
//   Q4_0     32     4         8    32: d       -
//   Q4_1     32     4         0    32: d       m
//   Q5_0     32     5        16    32: d       -
//   Q5_1     32     5         0    32: d       m
//   Q4_K    256     4         0    32: d·sc    -dmin·m
//   Q5_K    256     5         0    32: d·sc    -dmin·m
//   Q6_K    256     6        32    16: d·sc    -
//   Q3_K    256     3         4    16: d·(sc-32)  -
//   Q2_K    256     2         0    16: d·sc    -dmin·m (per 16)
//
// The offset makes every code unsigned, which the AVX-512 VNNI dot product
// (unsigned × signed bytes) needs; the product with activations q is
// Σ u·q - offset·Σ q, exact in int32.
#pragma once

#include <cstdint>

#include "kernels/dtype.h"

namespace kvserve {

struct BlockFormat {
  int code_offset = 0;
  bool has_bias = false;  // b above is not zero
  bool k_quant = false;   // 256-element blocks; activations in Q8_K blocks
};

/// The format of a block DType (IsBlockDType); {} for any other.
BlockFormat BlockFormatOf(DType dtype);

/// Scale g (0-15) of a Q3_K block, signed (stored − 32), from its 12 packed
/// bytes: the low 4 bits in byte g % 8 (its low nibble for g < 8, its high
/// one from 8 on), the top 2 bits in byte 8 + g % 4 at bit 2·(g / 4).
inline int Q3KScale(const uint8_t* scales, int g) {
  const int low = g < 8 ? scales[g] & 0x0F : scales[g - 8] >> 4;
  const int high = (scales[8 + g % 4] >> (2 * (g / 4))) & 3;
  return (low | (high << 4)) - 32;
}

}  // namespace kvserve
