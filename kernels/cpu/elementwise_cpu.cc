// Row-wise ops: embedding lookup, RMSNorm, rotary embeddings, SiLU·mul, gather.
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/cpu/vector_math.h"

namespace kvserve::cpu {
namespace {

void NormalizeRow(const float* x, const float* weight, int n, float eps, float* out) {
  // Accumulate in double: the sum of squares of a 4096-wide row loses bits in float.
  double sum_sq = 0.0;
  for (int i = 0; i < n; ++i) sum_sq += static_cast<double>(x[i]) * x[i];
  const float inv_rms = static_cast<float>(1.0 / std::sqrt(sum_sq / n + eps));
  for (int i = 0; i < n; ++i) out[i] = x[i] * inv_rms * weight[i];
}

}  // namespace

absl::Status Embedding(Tensor ids, Tensor table, Tensor out) {
  const int64_t vocab = table.dim(0), hidden = table.dim(1);
  const int32_t* id = ids.as<int32_t>();
  for (int64_t t = 0; t < ids.dim(0); ++t) {
    if (id[t] < 0 || id[t] >= vocab) {
      return absl::OutOfRangeError(absl::StrCat("Embedding: token id ", id[t], " not in [0, ", vocab, ")"));
    }
    // bfloat16 and Q8_0 rows are converted on lookup (exactly).
    RETURN_IF_ERROR(ConvertToFloat32(table.Rows(id[t], 1).data, table.dtype, hidden,
                                     out.as<float>() + t * hidden));
  }
  return absl::OkStatus();
}

void RmsNorm(Tensor x, Tensor weight, float eps, Tensor out) {
  const int64_t rows = x.dim(0), n = x.dim(1);
  for (int64_t r = 0; r < rows; ++r) {
    NormalizeRow(x.as<float>() + r * n, weight.as<float>(), static_cast<int>(n), eps,
                 out.as<float>() + r * n);
  }
}

void AddRmsNorm(Tensor residual, Tensor x, Tensor weight, float eps, Tensor out) {
  const int64_t rows = x.dim(0), n = x.dim(1);
  for (int64_t r = 0; r < rows; ++r) {
    float* res = residual.as<float>() + r * n;
    const float* xr = x.as<float>() + r * n;
    for (int64_t i = 0; i < n; ++i) res[i] += xr[i];
    NormalizeRow(res, weight.as<float>(), static_cast<int>(n), eps, out.as<float>() + r * n);
  }
}

absl::Status RopeSplitQkv(const RopeSplitParams& p) {
  const int heads = p.shape.num_heads, kv_heads = p.shape.num_kv_heads, dim = p.shape.head_dim;
  const int half = dim / 2;
  const int64_t tokens = p.qkv.dim(0), max_pos = p.cos_sin.dim(0);
  const int64_t row = p.qkv.dim(1);
  auto rotate = [&](const float* in, const float* cos, const float* sin, float* out) {
    for (int i = 0; i < half; ++i) {
      const float x1 = in[i], x2 = in[i + half];
      out[i] = x1 * cos[i] - x2 * sin[i];
      out[i + half] = x2 * cos[i] + x1 * sin[i];
    }
  };
  for (int64_t t = 0; t < tokens; ++t) {
    const int32_t pos = p.positions.as<int32_t>()[t];
    if (pos < 0 || pos >= max_pos) {
      return absl::OutOfRangeError(absl::StrCat("RopeSplitQkv: position ", pos, " not in [0, ", max_pos, ")"));
    }
    const float* cos = p.cos_sin.as<float>() + pos * dim;
    const float* sin = cos + half;
    const float* src = p.qkv.as<float>() + t * row;
    for (int h = 0; h < heads; ++h) {
      rotate(src + h * dim, cos, sin, p.q_out.as<float>() + (t * heads + h) * dim);
    }
    const float* k_src = src + heads * dim;
    for (int h = 0; h < kv_heads; ++h) {
      rotate(k_src + h * dim, cos, sin, p.k_out.as<float>() + (t * kv_heads + h) * dim);
    }
    std::memcpy(p.v_out.as<float>() + t * kv_heads * dim, k_src + kv_heads * dim,
                sizeof(float) * kv_heads * dim);
  }
  if (p.writes_cache()) return WriteKvCache(p.k_out, p.v_out, p.slot_mapping, p.cache);
  return absl::OkStatus();
}

void SiluMul(Tensor gate_up, Tensor out) {
  const int64_t rows = out.dim(0), n = out.dim(1);
  auto row = [&](int64_t r) {
    const float* gate = gate_up.as<float>() + r * 2 * n;
    SiluMulRow(gate, gate + n, out.as<float>() + r * n, n);
  };
  // A prefill's rows split over the pool (one row, a decode step's, is a
  // few microseconds: not worth a handoff).
  ThreadPool& pool = ThreadPool::Shared();
  if (rows < 2 * pool.num_threads()) {
    for (int64_t r = 0; r < rows; ++r) row(r);
    return;
  }
  const int chunks = pool.num_threads() * 4;
  pool.ParallelFor(chunks, [&](int c) {
    for (int64_t r = rows * c / chunks; r < rows * (c + 1) / chunks; ++r) row(r);
  });
}

absl::Status GatherRows(Tensor x, Tensor rows, Tensor out) {
  const size_t row_bytes = static_cast<size_t>(x.dim(1)) * DTypeSize(x.dtype);
  for (int64_t i = 0; i < rows.dim(0); ++i) {
    const int32_t r = rows.as<int32_t>()[i];
    if (r < 0 || r >= x.dim(0)) {
      return absl::OutOfRangeError(absl::StrCat("GatherRows: row ", r, " not in [0, ", x.dim(0), ")"));
    }
    std::memcpy(static_cast<char*>(out.data) + i * row_bytes,
                static_cast<const char*>(x.data) + r * row_bytes, row_bytes);
  }
  return absl::OkStatus();
}

}  // namespace kvserve::cpu
