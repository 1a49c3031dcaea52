#include "kernels/quant/quantized_activations.h"

#include <emmintrin.h>

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

// max |x[i]| over n values (n a multiple of 16), with SSE2 (every x86-64 has
// it) in four independent chains: a scalar loop of max and fabs was half of
// rounding a prefill's activations. A NaN is skipped, as the scalar
// comparisons skip it (maxps returns its second operand when either is NaN).
const __m128 kMagnitudeBits = _mm_castsi128_ps(_mm_set1_epi32(0x7fffffff));

float MaxMagnitude(const float* x, int n) {
  __m128 amax[4] = {_mm_setzero_ps(), _mm_setzero_ps(), _mm_setzero_ps(), _mm_setzero_ps()};
  for (int i = 0; i < n; i += 16) {
    for (int c = 0; c < 4; ++c) {
      amax[c] = _mm_max_ps(_mm_and_ps(_mm_loadu_ps(x + i + 4 * c), kMagnitudeBits), amax[c]);
    }
  }
  alignas(16) float lanes[4];
  _mm_store_ps(lanes, _mm_max_ps(_mm_max_ps(amax[0], amax[1]), _mm_max_ps(amax[2], amax[3])));
  return std::max(std::max(lanes[0], lanes[1]), std::max(lanes[2], lanes[3]));
}

// The first i with |x[i]| == magnitude (n a multiple of 4; one exists).
int FirstWithMagnitude(const float* x, int n, float magnitude) {
  const __m128 m = _mm_set1_ps(magnitude);
  for (int i = 0; i < n; i += 4) {
    const int hits = _mm_movemask_ps(_mm_cmpeq_ps(_mm_and_ps(_mm_loadu_ps(x + i), kMagnitudeBits), m));
    if (hits != 0) return i + __builtin_ctz(static_cast<unsigned>(hits));
  }
  return 0;
}

// ggml's Q8_0 (and Q8_1) activation blocks as its x86 SIMD quantize_row_q8_0
// makes them, which is what llama.cpp runs on the CPUs kvserve runs on: 32
// values, d = max|x| / 127 kept as float16 (what the dot products multiply
// by), q = round-half-even(x · 127 / max|x|). (ggml's scalar reference
// rounds x · (1 / d) half away from zero: the same but for ties and the
// last bit of the multiplier.)
void RoundQ8_0(const float* x, int8_t* q, float* d_out) {
  const float amax = MaxMagnitude(x, 32);
  const float d = amax / 127.f;
  const float id = amax != 0 ? 127.f / amax : 0.f;
  for (int i = 0; i < 32; ++i) q[i] = static_cast<int8_t>(NearestInt(x[i] * id));
  *d_out = HalfToFloat(FloatToHalf(d));
}

// ggml's quantize_row_q8_K_ref: 256 values, float32 scale.
void RoundQ8_K(const float* x, int8_t* q, float* d_out) {
  // The value of largest magnitude, the first of equal ones (ggml's loop
  // keeps the first: its comparison is strict).
  const float amax = MaxMagnitude(x, 256);
  if (amax == 0) {
    std::fill(q, q + 256, int8_t{0});
    *d_out = 0;
    return;
  }
  const float max = x[FirstWithMagnitude(x, 256, amax)];
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
