// The activation side of a product with block-quantized weights: float32 rows
// of x rounded to int8 per block, as llama.cpp rounds them before its integer
// dot products (docs/quantized_weights.md):
//   - for Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 weights, ggml's Q8_0 / Q8_1 blocks as
//     its x86 code makes them: 32 values, d = max|x| / 127 stored as float16,
//     q = round-half-even(x · 127 / max|x|);
//   - for the K-quants, ggml's Q8_K blocks: 256 values, d = max / -127 where
//     max is the value of largest magnitude (float32), q = nearest-even of x/d.
// Besides q it keeps what every kernel needs per row, so the products do no
// per-row work of their own: the scale of each 4 values ("lane": one int32 of
// a VNNI dot product), the weight format's code offset times each lane's Σq
// (the VNNI kernel multiplies unsigned codes: Σ (u - o)·q = Σ u·q - o·Σ q),
// and d·Σq over each 16 values (for the formats whose weights have a bias).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/dtype.h"

namespace kvserve {

struct QuantizedActivations {
  DType weight_dtype = DType::kQ8_0;  // the format these rows were rounded for
  int m = 0, k = 0;
  std::vector<int8_t> q;            // [m, k]
  std::vector<float> lane_scale;    // [m, k / 4]: d of the block each 4 values are in
  std::vector<int32_t> lane_bias;   // [m, k / 4]: -offset · Σ of the 4 values' q
  std::vector<float> group_sums;    // [k / 16, m]: d · Σ q over each 16 values, by
                                    // group then row (the tile vectorizes over rows)
  std::vector<float> row_group_sums;  // [m, k / 16]: the same by row (the fused products)
  // By lane [m, k / 4], each value repeated for the 4 lanes of its group of 16
  // (the AVX-512 kernels' layout, which sums each group's lanes first):
  std::vector<int32_t> group_bias_lanes;  // -offset · Σ q over the group
  std::vector<float> group_sum_lanes;     // d · Σ q over the group

  const int8_t* q_row(int r) const { return q.data() + int64_t(r) * k; }
  const float* scale_row(int r) const { return lane_scale.data() + int64_t(r) * (k / 4); }
  const int32_t* bias_row(int r) const { return lane_bias.data() + int64_t(r) * (k / 4); }
  float group_sum(int r, int g) const { return group_sums[size_t(g) * m + r]; }
  const float* group_row(int r) const { return row_group_sums.data() + size_t(r) * (k / 16); }
  const int32_t* group_bias_lane_row(int r) const {
    return group_bias_lanes.data() + size_t(r) * (k / 4);
  }
  const float* group_sum_lane_row(int r) const { return group_sum_lanes.data() + size_t(r) * (k / 4); }
  const float* group_column(int g) const { return group_sums.data() + size_t(g) * m; }
};

/// Sizes `out` for m rows of k values for weights of `weight_dtype` (a block
/// format; k a multiple of its block size).
void ResizeQuantizedActivations(DType weight_dtype, int m, int k, QuantizedActivations* out);

/// Rounds rows [row_begin, row_end) of x ([m, k] float32, row stride ldx)
/// into `out`, sized by ResizeQuantizedActivations. Rows are independent, so
/// threads may fill disjoint row ranges.
void QuantizeActivationRows(const float* x, int64_t ldx, int row_begin, int row_end,
                            QuantizedActivations* out);

/// The values the kernels multiply by, d · q, for row r (k floats): the
/// reference the kernel tests compare against.
void DequantizeActivationRow(const QuantizedActivations& a, int r, float* out);

}  // namespace kvserve
