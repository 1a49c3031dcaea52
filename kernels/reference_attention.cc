#include "kernels/reference_attention.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/attention_math.h"

namespace kvserve {

absl::Status PaddedReferenceAttention(Tensor q, Tensor k, Tensor v, const int32_t* lengths,
                                      bool causal, float scale, Tensor out) {
  if (q.rank != 4 || k.rank != 4 || v.rank != 4 || out.rank != 4 || q.dtype != DType::kFloat32 ||
      k.dtype != DType::kFloat32 || v.dtype != DType::kFloat32 || out.dtype != DType::kFloat32) {
    return absl::InvalidArgumentError("PaddedReferenceAttention: float32 [B, S, heads, D] tensors");
  }
  const int batch = static_cast<int>(q.dim(0)), seq = static_cast<int>(q.dim(1));
  const int heads = static_cast<int>(q.dim(2)), dim = static_cast<int>(q.dim(3));
  const int kv_heads = static_cast<int>(k.dim(2));
  if (k.dim(0) != batch || k.dim(1) != seq || k.dim(3) != dim || v.dim(0) != batch ||
      v.dim(1) != seq || v.dim(2) != kv_heads || v.dim(3) != dim || out.dim(0) != batch ||
      out.dim(1) != seq || out.dim(2) != heads || out.dim(3) != dim || kv_heads <= 0 ||
      heads % kv_heads != 0) {
    return absl::InvalidArgumentError(absl::StrCat("PaddedReferenceAttention: shapes ",
                                                   q.DebugString(), " ", k.DebugString(), " ",
                                                   v.DebugString(), " ", out.DebugString()));
  }
  const int group = heads / kv_heads;
  const float* qd = q.as<float>();
  const float* kd = k.as<float>();
  const float* vd = v.as<float>();
  float* od = out.as<float>();
  auto q_at = [&](int b, int i, int h) { return qd + ((int64_t(b) * seq + i) * heads + h) * dim; };
  auto k_at = [&](int b, int j, int h) { return kd + ((int64_t(b) * seq + j) * kv_heads + h) * dim; };
  auto v_at = [&](int b, int j, int h) { return vd + ((int64_t(b) * seq + j) * kv_heads + h) * dim; };
  auto o_at = [&](int b, int i, int h) { return od + ((int64_t(b) * seq + i) * heads + h) * dim; };

  // Scores for one chunk of query rows: [chunk, S_max].
  std::vector<float> scores(static_cast<size_t>(kReferenceQueryChunk) * seq);
  for (int b = 0; b < batch; ++b) {
    const int length = std::clamp(lengths[b], 0, seq);
    for (int h = 0; h < heads; ++h) {
      const int kvh = h / group;
      for (int row0 = 0; row0 < seq; row0 += kReferenceQueryChunk) {
        const int rows = std::min(kReferenceQueryChunk, seq - row0);
        // S = Q·Kᵀ / √d + M
        for (int r = 0; r < rows; ++r) {
          const int i = row0 + r;
          float* s = &scores[static_cast<size_t>(r) * seq];
          for (int j = 0; j < seq; ++j) {
            const bool masked = i >= length || j >= length || (causal && j > i);
            s[j] = masked ? kMaskedScore : Dot(q_at(b, i, h), k_at(b, j, kvh), dim) * scale;
          }
          // P = softmax(S), guarded
          GuardedSoftmaxInPlace(s, seq);
          // O = P·V
          float* o = o_at(b, i, h);
          std::fill(o, o + dim, 0.f);
          for (int j = 0; j < seq; ++j) {
            if (s[j] == 0.f) continue;
            const float* vj = v_at(b, j, kvh);
            for (int d = 0; d < dim; ++d) o[d] += s[j] * vj[d];
          }
        }
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace kvserve
