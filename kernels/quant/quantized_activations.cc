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

// ggml's Q8_0 (and Q8_1) activation blocks as its x86 SIMD quantize_row_q8_0
// makes them, which is what llama.cpp runs on the CPUs kvserve runs on: 32
// values, d = max|x| / 127 kept as float16 (what the dot products multiply
// by), q = round-half-even(x · 127 / max|x|). (ggml's scalar reference
// rounds x · (1 / d) half away from zero: the same but for ties and the
// last bit of the multiplier.)
void RoundQ8_0(const float* x, int8_t* q, float* d_out) {
  float amax = 0;
  for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[i]));
  const float d = amax / 127.f;
  const float id = amax != 0 ? 127.f / amax : 0.f;
  for (int i = 0; i < 32; ++i) q[i] = static_cast<int8_t>(NearestInt(x[i] * id));
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
