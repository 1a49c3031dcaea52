#include "engine/model/rope.h"

#include <cmath>

namespace kvserve {

std::vector<float> RopeInverseFrequencies(const ModelConfig& c) {
  const int half = c.head_dim / 2;
  std::vector<float> inv_freq(half);
  for (int i = 0; i < half; ++i) {
    // transformers: 1 / base ** (arange(0, dim, 2).float() / dim), in float32.
    const float exponent = static_cast<float>(2 * i) / static_cast<float>(c.head_dim);
    inv_freq[i] = 1.0f / std::pow(static_cast<float>(c.rope_theta), exponent);
  }
  const RopeScaling& s = c.rope_scaling;
  if (s.type == RopeScaling::Type::kLinear) {
    for (float& f : inv_freq) f = static_cast<float>(f / s.factor);
  } else if (s.type == RopeScaling::Type::kLlama3) {
    const double old_context = static_cast<double>(s.original_max_position_embeddings);
    const double low_freq_wavelen = old_context / s.low_freq_factor;
    const double high_freq_wavelen = old_context / s.high_freq_factor;
    for (float& f : inv_freq) {
      const double wavelen = 2.0 * M_PI / f;
      if (wavelen > low_freq_wavelen) {
        f = static_cast<float>(f / s.factor);  // low frequencies: fully scaled
      } else if (wavelen >= high_freq_wavelen) {
        // medium: interpolate between scaled and unscaled
        const double smooth = (old_context / wavelen - s.low_freq_factor) /
                              (s.high_freq_factor - s.low_freq_factor);
        f = static_cast<float>((1.0 - smooth) * f / s.factor + smooth * f);
      }  // high frequencies: unchanged
    }
  }
  return inv_freq;
}

std::vector<float> BuildRopeTable(const ModelConfig& c, int max_positions) {
  const int dim = c.head_dim, half = dim / 2;
  const std::vector<float> inv_freq = RopeInverseFrequencies(c);
  std::vector<float> table(static_cast<size_t>(max_positions) * dim);
  for (int pos = 0; pos < max_positions; ++pos) {
    float* row = &table[static_cast<size_t>(pos) * dim];
    for (int i = 0; i < half; ++i) {
      const float angle = static_cast<float>(pos) * inv_freq[i];  // float32, as torch does
      row[i] = std::cos(angle);
      row[half + i] = std::sin(angle);
    }
  }
  return table;
}

}  // namespace kvserve
