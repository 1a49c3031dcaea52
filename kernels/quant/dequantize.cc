#include "kernels/quant/dequantize.h"

#include <cstring>

#include "kernels/quant/block_formats.h"

namespace kvserve {
namespace {

// Blocks are byte-packed; fields are read with memcpy, never through casts.
float Half(const uint8_t* p) {
  uint16_t bits;
  std::memcpy(&bits, p, 2);
  return HalfToFloat(bits);
}

// block_q8_0 {half d; int8 qs[32]}
void DequantQ8_0(const uint8_t* b, int64_t nb, float* y) {
  for (int64_t i = 0; i < nb; ++i, b += 34, y += 32) {
    const float d = Half(b);
    for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(static_cast<int8_t>(b[2 + j])) * d;
  }
}

// block_q4_0 {half d; uint8 qs[16]}: low nibbles are elements 0-15, high 16-31.
void DequantQ4_0(const uint8_t* b, int64_t nb, float* y) {
  for (int64_t i = 0; i < nb; ++i, b += 18, y += 32) {
    const float d = Half(b);
    const uint8_t* qs = b + 2;
    for (int j = 0; j < 16; ++j) {
      y[j] = static_cast<float>((qs[j] & 0x0F) - 8) * d;
      y[j + 16] = static_cast<float>((qs[j] >> 4) - 8) * d;
    }
  }
}

// block_q4_1 {half d; half m; uint8 qs[16]}
void DequantQ4_1(const uint8_t* b, int64_t nb, float* y) {
  for (int64_t i = 0; i < nb; ++i, b += 20, y += 32) {
    const float d = Half(b), m = Half(b + 2);
    const uint8_t* qs = b + 4;
    for (int j = 0; j < 16; ++j) {
      y[j] = static_cast<float>(qs[j] & 0x0F) * d + m;
      y[j + 16] = static_cast<float>(qs[j] >> 4) * d + m;
    }
  }
}

// block_q5_0 {half d; uint8 qh[4]; uint8 qs[16]}: qh holds the fifth bits.
void DequantQ5_0(const uint8_t* b, int64_t nb, float* y) {
  for (int64_t i = 0; i < nb; ++i, b += 22, y += 32) {
    const float d = Half(b);
    uint32_t qh;
    std::memcpy(&qh, b + 2, 4);
    const uint8_t* qs = b + 6;
    for (int j = 0; j < 16; ++j) {
      const int x0 = (qs[j] & 0x0F) | (((qh >> j) << 4) & 0x10);
      const int x1 = (qs[j] >> 4) | ((qh >> (j + 12)) & 0x10);
      y[j] = static_cast<float>(x0 - 16) * d;
      y[j + 16] = static_cast<float>(x1 - 16) * d;
    }
  }
}

// block_q5_1 {half d; half m; uint8 qh[4]; uint8 qs[16]}
void DequantQ5_1(const uint8_t* b, int64_t nb, float* y) {
  for (int64_t i = 0; i < nb; ++i, b += 24, y += 32) {
    const float d = Half(b), m = Half(b + 2);
    uint32_t qh;
    std::memcpy(&qh, b + 4, 4);
    const uint8_t* qs = b + 8;
    for (int j = 0; j < 16; ++j) {
      const int x0 = (qs[j] & 0x0F) | (((qh >> j) << 4) & 0x10);
      const int x1 = (qs[j] >> 4) | ((qh >> (j + 12)) & 0x10);
      y[j] = static_cast<float>(x0) * d + m;
      y[j + 16] = static_cast<float>(x1) * d + m;
    }
  }
}

// The 6-bit scale and min of sub-block j (0-7) in the K-quants' 12 packed bytes.
void ScaleMinK4(int j, const uint8_t* q, uint8_t* sc, uint8_t* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = (q[j + 4] & 0x0F) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

// block_q4_K {half d; half dmin; uint8 scales[12]; uint8 qs[128]}: 8 sub-blocks of 32.
void DequantQ4_K(const uint8_t* b, int64_t nb, float* y) {
  for (int64_t i = 0; i < nb; ++i, b += 144) {
    const float d = Half(b), dmin = Half(b + 2);
    const uint8_t* scales = b + 4;
    const uint8_t* q = b + 16;
    for (int j = 0, is = 0; j < 256; j += 64, q += 32, is += 2) {
      uint8_t sc, m;
      ScaleMinK4(is, scales, &sc, &m);
      const float d1 = d * sc, m1 = dmin * m;
      ScaleMinK4(is + 1, scales, &sc, &m);
      const float d2 = d * sc, m2 = dmin * m;
      for (int l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>(q[l] & 0x0F) - m1;
      for (int l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>(q[l] >> 4) - m2;
    }
  }
}

// block_q5_K {half d; half dmin; uint8 scales[12]; uint8 qh[32]; uint8 qs[128]}
void DequantQ5_K(const uint8_t* b, int64_t nb, float* y) {
  for (int64_t i = 0; i < nb; ++i, b += 176) {
    const float d = Half(b), dmin = Half(b + 2);
    const uint8_t* scales = b + 4;
    const uint8_t* qh = b + 16;
    const uint8_t* ql = b + 48;
    uint8_t u1 = 1, u2 = 2;
    for (int j = 0, is = 0; j < 256; j += 64, ql += 32, is += 2, u1 <<= 2, u2 <<= 2) {
      uint8_t sc, m;
      ScaleMinK4(is, scales, &sc, &m);
      const float d1 = d * sc, m1 = dmin * m;
      ScaleMinK4(is + 1, scales, &sc, &m);
      const float d2 = d * sc, m2 = dmin * m;
      for (int l = 0; l < 32; ++l) {
        *y++ = d1 * static_cast<float>((ql[l] & 0x0F) + (qh[l] & u1 ? 16 : 0)) - m1;
      }
      for (int l = 0; l < 32; ++l) {
        *y++ = d2 * static_cast<float>((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0)) - m2;
      }
    }
  }
}

// block_q6_K {uint8 ql[128]; uint8 qh[64]; int8 scales[16]; half d}
void DequantQ6_K(const uint8_t* b, int64_t nb, float* y) {
  for (int64_t i = 0; i < nb; ++i, b += 210) {
    const float d = Half(b + 208);
    const uint8_t* ql = b;
    const uint8_t* qh = b + 128;
    const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192);
    for (int n = 0; n < 256; n += 128, y += 128, ql += 64, qh += 32, sc += 8) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = ((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l] = d * static_cast<float>(sc[is]) * static_cast<float>(q1);
        y[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
        y[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
        y[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
      }
    }
  }
}

// block_q3_K {uint8 hmask[32]; uint8 qs[64]; uint8 scales[12]; half d}: per
// 128 weights, 32 bytes of qs hold four 2-bit planes (shift 0, 2, 4, 6) of
// 32 weights each; weight l of plane p has its third bit in hmask[l] bit
// 4·half + p, and a clear bit means −4. Scales per 16.
void DequantQ3_K(const uint8_t* b, int64_t nb, float* y) {
  for (int64_t i = 0; i < nb; ++i, b += 110) {
    const uint8_t* hmask = b;
    const uint8_t* scales = b + 96;
    const float d = Half(b + 108);
    for (int half = 0; half < 2; ++half) {
      const uint8_t* q = b + 32 + 32 * half;
      for (int plane = 0; plane < 4; ++plane) {
        const int bit = 4 * half + plane;
        for (int l = 0; l < 32; ++l) {
          const int code = ((q[l] >> (2 * plane)) & 3) - ((hmask[l] >> bit) & 1 ? 0 : 4);
          const float scale = d * static_cast<float>(Q3KScale(scales, 2 * bit + l / 16));
          *y++ = scale * static_cast<float>(code);
        }
      }
    }
  }
}

// block_q2_K {uint8 scales[16]; uint8 qs[64]; half d; half dmin}: the 2-bit
// planes as Q3_K's; scale byte j (per 16 weights) holds the scale in its low
// nibble and the minimum in its high one.
void DequantQ2_K(const uint8_t* b, int64_t nb, float* y) {
  for (int64_t i = 0; i < nb; ++i, b += 84) {
    const uint8_t* scales = b;
    const float d = Half(b + 80), dmin = Half(b + 82);
    for (int half = 0; half < 2; ++half) {
      const uint8_t* q = b + 16 + 32 * half;
      for (int plane = 0; plane < 4; ++plane) {
        for (int l = 0; l < 32; ++l) {
          const uint8_t sc = scales[8 * half + 2 * plane + l / 16];
          *y++ = d * static_cast<float>(sc & 0x0F) * static_cast<float>((q[l] >> (2 * plane)) & 3) -
                 dmin * static_cast<float>(sc >> 4);
        }
      }
    }
  }
}

}  // namespace

void DequantizeBlocks(DType dtype, const void* source, int64_t nb, float* dst) {
  const auto* src = static_cast<const uint8_t*>(source);
  switch (dtype) {
    case DType::kQ8_0: DequantQ8_0(src, nb, dst); break;
    case DType::kQ4_0: DequantQ4_0(src, nb, dst); break;
    case DType::kQ4_1: DequantQ4_1(src, nb, dst); break;
    case DType::kQ5_0: DequantQ5_0(src, nb, dst); break;
    case DType::kQ5_1: DequantQ5_1(src, nb, dst); break;
    case DType::kQ4_K: DequantQ4_K(src, nb, dst); break;
    case DType::kQ5_K: DequantQ5_K(src, nb, dst); break;
    case DType::kQ6_K: DequantQ6_K(src, nb, dst); break;
    case DType::kQ2_K: DequantQ2_K(src, nb, dst); break;
    case DType::kQ3_K: DequantQ3_K(src, nb, dst); break;
    default: break;
  }
}

}  // namespace kvserve
