// The masked, numerically guarded softmax shared by the reference attention
// and the CPU kernels. Masked keys are left out of the sum (the −∞ of
// softmax(QKᵀ/√d + M)); a row whose keys are all masked yields a zero output,
// never NaN; subtracting the row maximum keeps scores of ±1e4 finite.
#pragma once

#include <cmath>
#include <limits>

namespace kvserve {

inline constexpr float kMaskedScore = -std::numeric_limits<float>::infinity();

/// Turns `scores[0..n)` (masked entries = −∞) into probabilities in place.
/// Returns false, leaving zeros, when every entry is masked.
inline bool GuardedSoftmaxInPlace(float* scores, int n) {
  float max_score = kMaskedScore;
  for (int j = 0; j < n; ++j) max_score = scores[j] > max_score ? scores[j] : max_score;
  if (max_score == kMaskedScore) {
    for (int j = 0; j < n; ++j) scores[j] = 0.f;
    return false;
  }
  float sum = 0.f;
  for (int j = 0; j < n; ++j) {
    // exp(−∞ − max) = 0: masked keys get exactly zero weight.
    float e = std::exp(scores[j] - max_score);
    scores[j] = e;
    sum += e;
  }
  const float inv = 1.f / sum;  // sum >= 1: the max entry contributes exp(0)
  for (int j = 0; j < n; ++j) scores[j] *= inv;
  return true;
}

inline float Dot(const float* a, const float* b, int n) {
  float acc = 0.f;
  for (int i = 0; i < n; ++i) acc += a[i] * b[i];
  return acc;
}

}  // namespace kvserve
