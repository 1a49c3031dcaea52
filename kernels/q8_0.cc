#include "kernels/q8_0.h"

#include <algorithm>
#include <cmath>

#include "kernels/dtype.h"

namespace kvserve {

void DequantizeQ8_0(const BlockQ8_0* src, int64_t count, float* dst) {
  for (int64_t b = 0; b < count / kQ8_0BlockSize; ++b, dst += kQ8_0BlockSize) {
    const float d = HalfToFloat(src[b].scale);
    for (int i = 0; i < kQ8_0BlockSize; ++i) dst[i] = d * static_cast<float>(src[b].q[i]);
  }
}

void QuantizeQ8_0(const float* src, int64_t count, BlockQ8_0* dst) {
  for (int64_t b = 0; b < count / kQ8_0BlockSize; ++b, src += kQ8_0BlockSize) {
    float amax = 0;
    for (int i = 0; i < kQ8_0BlockSize; ++i) amax = std::max(amax, std::fabs(src[i]));
    const float d = amax / 127.f;
    const float inverse = d != 0 ? 1.f / d : 0.f;
    dst[b].scale = FloatToHalf(d);
    for (int i = 0; i < kQ8_0BlockSize; ++i) {
      dst[b].q[i] = static_cast<int8_t>(std::lround(src[i] * inverse));
    }
  }
}

}  // namespace kvserve
