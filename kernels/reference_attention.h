// Reference attention over a padded batch, written to mirror the formula
//
//   Attention(Q, K, V) = softmax(Q·Kᵀ / √d_k + M) · V
//
// where M[i][j] = −∞ when key j is padding (j >= length) or in the future of
// query i (causal: j > i), else 0. It is the ground truth the packed and paged
// kernels are tested against. To keep memory O(n·d) it materializes the score
// matrix a chunk of query rows at a time (at most kQueryChunk × S_max scores
// per head), never the whole n×n matrix.
#pragma once

#include "absl/status/status.h"
#include "kernels/tensor.h"

namespace kvserve {

inline constexpr int kReferenceQueryChunk = 64;

/// q: [B, S_max, H, D], k and v: [B, S_max, Hkv, D], lengths: [B] (host int32),
/// out: [B, S_max, H, D]; all float32 on the host. Rows at or past a
/// sequence's length are fully masked and come out as zeros.
absl::Status PaddedReferenceAttention(Tensor q, Tensor k, Tensor v, const int32_t* lengths,
                                      bool causal, float scale, Tensor out);

}  // namespace kvserve
