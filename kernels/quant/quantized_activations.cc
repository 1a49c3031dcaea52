#include "kernels/quant/quantized_activations.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/quant/block_formats.h"

namespace kvserve {
namespace {

// ggml's nearest_int: round half to even through the float32 magic number
// (|v| ≤ 2^22), as quantize_row_q8_K_ref rounds.
int NearestInt(float v) {
  const float shifted = v + 12582912.f;
  int32_t bits;
  std::memcpy(&bits, &shifted, sizeof(bits));
  return (bits & 0x007fffff) - 0x00400000;
}

// roundf (halves away from zero) without the libm call: |v| ≤ 127 here, and
// |v| + 0.5 is exact in double, so truncating it is floor(|v| + 0.5).
inline int RoundHalfAway(float v) {
  const int magnitude = static_cast<int>(std::fabs(static_cast<double>(v)) + 0.5);
  return v < 0 ? -magnitude : magnitude;
}

// ggml's quantize_row_q8_0_ref (and q8_1's values): 32 values, scale rounded
// to float16, which is what the dot products multiply by.
void RoundQ8_0(const float* x, int8_t* q, float* d_out) {
  float amax = 0;
  for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[i]));
  const float d = amax / 127.f;
  const float id = d != 0 ? 1.f / d : 0.f;
  for (int i = 0; i < 32; ++i) q[i] = static_cast<int8_t>(RoundHalfAway(x[i] * id));
  *d_out = HalfToFloat(FloatToHalf(d));
}

// ggml's quantize_row_q8_K_ref: 256 values, float32 scale.
void RoundQ8_K(const float* x, int8_t* q, float* d_out) {
  float amax = 0, max = 0;
  for (int i = 0; i < 256; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  }
  if (amax == 0) {
    std::fill(q, q + 256, int8_t{0});
    *d_out = 0;
    return;
  }
  const float iscale = -127.f / max;
  for (int i = 0; i < 256; ++i) q[i] = static_cast<int8_t>(std::min(127, NearestInt(iscale * x[i])));
  *d_out = 1 / iscale;
}

}  // namespace

void ResizeQuantizedActivations(DType weight_dtype, int m, int k, QuantizedActivations* out) {
  out->weight_dtype = weight_dtype;
  out->m = m;
  out->k = k;
  out->q.resize(size_t(m) * k);
  out->lane_scale.resize(size_t(m) * (k / 4));
  out->lane_bias.resize(size_t(m) * (k / 4));
  out->group_sums.resize(size_t(m) * (k / 16));
  out->row_group_sums.resize(size_t(m) * (k / 16));
  out->group_bias_lanes.resize(size_t(m) * (k / 4));
  out->group_sum_lanes.resize(size_t(m) * (k / 4));
}

void QuantizeActivationRows(const float* x, int64_t ldx, int row_begin, int row_end,
                            QuantizedActivations* out) {
  const BlockFormat format = BlockFormatOf(out->weight_dtype);
  const int k = out->k;
  const int block = format.k_quant ? 256 : 32;
  for (int r = row_begin; r < row_end; ++r) {
    const float* xr = x + r * ldx;
    int8_t* q = out->q.data() + int64_t(r) * k;
    float* lane_scale = out->lane_scale.data() + int64_t(r) * (k / 4);
    int32_t* lane_bias = out->lane_bias.data() + int64_t(r) * (k / 4);
    for (int b = 0; b < k; b += block) {
      float d;
      if (format.k_quant) {
        RoundQ8_K(xr + b, q + b, &d);
      } else {
        RoundQ8_0(xr + b, q + b, &d);
      }
      for (int lane = b / 4; lane < (b + block) / 4; ++lane) {
        const int8_t* v = q + lane * 4;
        lane_scale[lane] = d;
        lane_bias[lane] = -format.code_offset * (v[0] + v[1] + v[2] + v[3]);
      }
      for (int g = b / 16; g < (b + block) / 16; ++g) {
        int sum = 0;
        for (int i = 0; i < 16; ++i) sum += q[g * 16 + i];
        out->group_sums[size_t(g) * out->m + r] = d * static_cast<float>(sum);
        out->row_group_sums[size_t(r) * (k / 16) + g] = d * static_cast<float>(sum);
        for (int l = 0; l < 4; ++l) {
          out->group_bias_lanes[size_t(r) * (k / 4) + 4 * g + l] = -format.code_offset * sum;
          out->group_sum_lanes[size_t(r) * (k / 4) + 4 * g + l] = d * static_cast<float>(sum);
        }
      }
    }
  }
}

void DequantizeActivationRow(const QuantizedActivations& a, int r, float* out) {
  const int8_t* q = a.q_row(r);
  const float* scale = a.scale_row(r);
  for (int i = 0; i < a.k; ++i) out[i] = scale[i / 4] * static_cast<float>(q[i]);
}

}  // namespace kvserve
