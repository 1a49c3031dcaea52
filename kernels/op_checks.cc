#include "kernels/op_checks.h"

#include "absl/strings/str_cat.h"

namespace kvserve {
namespace {

absl::Status Mismatch(absl::string_view op, absl::string_view what, const Tensor& t) {
  return absl::InvalidArgumentError(absl::StrCat(op, ": ", what, " (got ", t.DebugString(), ")"));
}

bool IsFloat(DType d) {
  return d == DType::kFloat32 || d == DType::kBFloat16 || d == DType::kFloat16;
}

// Whether a [rows, cols] weight of `w` may be used with activations of `x`.
bool WeightDTypeOk(DType w, DType x, int64_t cols, WeightDTypes accepted) {
  if (w == x) return true;
  if (accepted != WeightDTypes::kAlsoBf16AndBlocks || x != DType::kFloat32) return false;
  return w == DType::kBFloat16 || (IsBlockDType(w) && cols % DTypeBlockElems(w) == 0);
}

absl::Status CheckAttentionShape(absl::string_view op, const AttentionShape& s) {
  if (s.num_heads <= 0 || s.num_kv_heads <= 0 || s.head_dim <= 0 ||
      s.num_heads % s.num_kv_heads != 0) {
    return absl::InvalidArgumentError(absl::StrCat(op, ": bad heads ", s.num_heads, "/",
                                                   s.num_kv_heads, " head_dim ", s.head_dim));
  }
  return absl::OkStatus();
}

absl::Status CheckCache(absl::string_view op, const PagedKvCache& c, const AttentionShape& s,
                        DType dtype) {
  for (const Tensor* t : {&c.k, &c.v}) {
    if (t->rank != 4 || t->dim(1) != c.block_size || t->dim(2) != s.num_kv_heads ||
        t->dim(3) != s.head_dim || t->dtype != dtype) {
      return Mismatch(op, absl::StrCat("cache must be [blocks, ", c.block_size, ", ",
                                       s.num_kv_heads, ", ", s.head_dim, "] of ",
                                       DTypeName(dtype)),
                      *t);
    }
  }
  return absl::OkStatus();
}

absl::Status CheckTokens(absl::string_view op, absl::string_view name, const Tensor& t, int64_t rows,
                         int heads, int head_dim, DType dtype) {
  if (t.rank != 3 || t.dim(0) != rows || t.dim(1) != heads || t.dim(2) != head_dim ||
      t.dtype != dtype) {
    return Mismatch(op, absl::StrCat(name, " must be [", rows, ", ", heads, ", ", head_dim, "] of ",
                                     DTypeName(dtype)),
                    t);
  }
  return absl::OkStatus();
}

absl::Status CheckInt32(absl::string_view op, absl::string_view name, const Tensor& t, int rank) {
  if (t.dtype != DType::kInt32 || t.rank != rank) {
    return Mismatch(op, absl::StrCat(name, " must be int32 of rank ", rank), t);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckEmbedding(Tensor ids, Tensor table, Tensor out, WeightDTypes accepted) {
  if (ids.dtype != DType::kInt32 || ids.rank != 1) return Mismatch("Embedding", "ids [T] int32", ids);
  if (table.rank != 2) return Mismatch("Embedding", "table [V, hidden]", table);
  if (out.rank != 2 || out.dim(0) != ids.dim(0) || out.dim(1) != table.dim(1) || !IsFloat(out.dtype) ||
      !WeightDTypeOk(table.dtype, out.dtype, table.dim(1), accepted)) {
    return Mismatch("Embedding",
                    accepted == WeightDTypes::kComputeOnly
                        ? "out [T, hidden] of the table's dtype"
                        : "out [T, hidden] of the table's dtype, or float32 for a bfloat16 or "
                          "block-format table (hidden a multiple of its block: 32, or 256 for the "
                          "K-quants)",
                    out);
  }
  return absl::OkStatus();
}

absl::Status CheckRmsNorm(Tensor x, Tensor weight, Tensor out) {
  if (x.rank != 2 || !IsFloat(x.dtype)) return Mismatch("RmsNorm", "x [T, hidden]", x);
  if (weight.rank != 1 || weight.dim(0) != x.dim(1) || weight.dtype != x.dtype) {
    return Mismatch("RmsNorm", "weight [hidden] of x's dtype", weight);
  }
  if (out.rank != 2 || out.dim(0) != x.dim(0) || out.dim(1) != x.dim(1) || out.dtype != x.dtype) {
    return Mismatch("RmsNorm", "out like x", out);
  }
  return absl::OkStatus();
}

absl::Status CheckAddRmsNorm(Tensor residual, Tensor x, Tensor weight, Tensor out) {
  absl::Status s = CheckRmsNorm(x, weight, out);
  if (!s.ok()) return s;
  if (residual.rank != 2 || residual.dim(0) != x.dim(0) || residual.dim(1) != x.dim(1) ||
      residual.dtype != x.dtype) {
    return Mismatch("AddRmsNorm", "residual like x", residual);
  }
  return absl::OkStatus();
}

absl::Status CheckLinear(Tensor x, Tensor weight, Tensor bias, Tensor out,
                         WeightDTypes accepted) {
  if (x.rank != 2 || !IsFloat(x.dtype)) return Mismatch("Linear", "x [T, K]", x);
  if (weight.rank != 2 || weight.dim(1) != x.dim(1) ||
      !WeightDTypeOk(weight.dtype, x.dtype, weight.dim(1), accepted)) {
    return Mismatch("Linear",
                    absl::StrCat("weight [N, ", x.dim(1), "] of x's dtype",
                                 accepted == WeightDTypes::kComputeOnly
                                     ? ""
                                     : ", or bfloat16 or a block format (K a multiple of its "
                                       "block: 32, or 256 for the K-quants) with float32 x"),
                    weight);
  }
  if (!bias.empty() && (bias.rank != 1 || bias.dim(0) != weight.dim(0) || bias.dtype != x.dtype)) {
    return Mismatch("Linear", "bias [N] of x's dtype", bias);
  }
  if (out.rank != 2 || out.dim(0) != x.dim(0) || out.dim(1) != weight.dim(0) ||
      (out.dtype != x.dtype && out.dtype != DType::kFloat32)) {
    return Mismatch("Linear", absl::StrCat("out [", x.dim(0), ", ", weight.dim(0), "]"), out);
  }
  return absl::OkStatus();
}

absl::Status CheckRopeSplit(const RopeSplitParams& p) {
  const AttentionShape& s = p.shape;
  absl::Status st = CheckAttentionShape("RopeSplitQkv", s);
  if (!st.ok()) return st;
  if (s.head_dim % 2 != 0) return absl::InvalidArgumentError("RopeSplitQkv: odd head_dim");
  const int64_t tokens = p.qkv.dim(0);
  if (p.qkv.rank != 2 || p.qkv.dim(1) != (s.num_heads + 2 * s.num_kv_heads) * s.head_dim) {
    return Mismatch("RopeSplitQkv", "qkv [T, (H + 2*Hkv) * D]", p.qkv);
  }
  if (p.positions.dtype != DType::kInt32 || p.positions.rank != 1 || p.positions.dim(0) != tokens) {
    return Mismatch("RopeSplitQkv", "positions [T] int32", p.positions);
  }
  if (p.cos_sin.dtype != DType::kFloat32 || p.cos_sin.rank != 2 || p.cos_sin.dim(1) != s.head_dim) {
    return Mismatch("RopeSplitQkv", "cos_sin [max_positions, D] float32", p.cos_sin);
  }
  st = CheckTokens("RopeSplitQkv", "q_out", p.q_out, tokens, s.num_heads, s.head_dim, p.qkv.dtype);
  if (!st.ok()) return st;
  st = CheckTokens("RopeSplitQkv", "k_out", p.k_out, tokens, s.num_kv_heads, s.head_dim,
                   p.qkv.dtype);
  if (!st.ok()) return st;
  st = CheckTokens("RopeSplitQkv", "v_out", p.v_out, tokens, s.num_kv_heads, s.head_dim,
                   p.qkv.dtype);
  if (!st.ok() || !p.writes_cache()) return st;
  if ((st = CheckCache("RopeSplitQkv", p.cache, s, p.qkv.dtype)); !st.ok()) return st;
  if ((st = CheckInt32("RopeSplitQkv", "slot_mapping", p.slot_mapping, 1)); !st.ok()) return st;
  if (p.slot_mapping.dim(0) != tokens) {
    return Mismatch("RopeSplitQkv", absl::StrCat("slot_mapping [", tokens, "] int32"),
                    p.slot_mapping);
  }
  return absl::OkStatus();
}

absl::Status CheckSiluMul(Tensor gate_up, Tensor out) {
  if (gate_up.rank != 2 || gate_up.dim(1) % 2 != 0) return Mismatch("SiluMul", "gate_up [T, 2I]", gate_up);
  if (out.rank != 2 || out.dim(0) != gate_up.dim(0) || out.dim(1) * 2 != gate_up.dim(1) ||
      out.dtype != gate_up.dtype) {
    return Mismatch("SiluMul", "out [T, I]", out);
  }
  return absl::OkStatus();
}

absl::Status CheckGatherRows(Tensor x, Tensor rows, Tensor out) {
  if (rows.dtype != DType::kInt32 || rows.rank != 1) return Mismatch("GatherRows", "rows [S] int32", rows);
  if (x.rank != 2 || out.rank != 2 || out.dim(0) != rows.dim(0) || out.dim(1) != x.dim(1) ||
      out.dtype != x.dtype) {
    return Mismatch("GatherRows", "out [S, x.dim(1)] of x's dtype", out);
  }
  return absl::OkStatus();
}

absl::Status CheckPrefillAttention(const PrefillAttentionParams& p) {
  constexpr absl::string_view op = "PrefillAttention";
  const AttentionShape& s = p.shape;
  absl::Status st = CheckAttentionShape(op, s);
  if (!st.ok()) return st;
  const int64_t tokens = p.q.dim(0);
  const DType dtype = p.q.dtype;
  if ((st = CheckTokens(op, "q", p.q, tokens, s.num_heads, s.head_dim, dtype)); !st.ok()) return st;
  if ((st = CheckTokens(op, "k", p.k, tokens, s.num_kv_heads, s.head_dim, dtype)); !st.ok()) return st;
  if ((st = CheckTokens(op, "v", p.v, tokens, s.num_kv_heads, s.head_dim, dtype)); !st.ok()) return st;
  if ((st = CheckTokens(op, "out", p.out, tokens, s.num_heads, s.head_dim, dtype)); !st.ok()) return st;
  if ((st = CheckCache(op, p.cache, s, dtype)); !st.ok()) return st;
  if ((st = CheckInt32(op, "cu_seqlens_q", p.cu_seqlens_q, 1)); !st.ok()) return st;
  if ((st = CheckInt32(op, "context_lens", p.context_lens, 1)); !st.ok()) return st;
  if ((st = CheckInt32(op, "block_tables", p.block_tables, 2)); !st.ok()) return st;
  if ((st = CheckInt32(op, "slot_mapping", p.slot_mapping, 1)); !st.ok()) return st;
  if (p.cu_seqlens_q.dim(0) != p.num_seqs + 1 || p.context_lens.dim(0) != p.num_seqs ||
      p.block_tables.dim(0) < p.num_seqs || p.slot_mapping.dim(0) != tokens) {
    return absl::InvalidArgumentError(absl::StrCat(op, ": metadata does not match ", p.num_seqs,
                                                   " sequences and ", tokens, " tokens"));
  }
  return absl::OkStatus();
}

absl::Status CheckDecodeAttention(const DecodeAttentionParams& p) {
  constexpr absl::string_view op = "DecodeAttention";
  const AttentionShape& s = p.shape;
  absl::Status st = CheckAttentionShape(op, s);
  if (!st.ok()) return st;
  const int64_t seqs = p.num_seqs;
  const DType dtype = p.q.dtype;
  if ((st = CheckTokens(op, "q", p.q, seqs, s.num_heads, s.head_dim, dtype)); !st.ok()) return st;
  if ((st = CheckTokens(op, "k", p.k, seqs, s.num_kv_heads, s.head_dim, dtype)); !st.ok()) return st;
  if ((st = CheckTokens(op, "v", p.v, seqs, s.num_kv_heads, s.head_dim, dtype)); !st.ok()) return st;
  if ((st = CheckTokens(op, "out", p.out, seqs, s.num_heads, s.head_dim, dtype)); !st.ok()) return st;
  if ((st = CheckCache(op, p.cache, s, dtype)); !st.ok()) return st;
  if ((st = CheckInt32(op, "context_lens", p.context_lens, 1)); !st.ok()) return st;
  if ((st = CheckInt32(op, "block_tables", p.block_tables, 2)); !st.ok()) return st;
  if ((st = CheckInt32(op, "slot_mapping", p.slot_mapping, 1)); !st.ok()) return st;
  if (p.context_lens.dim(0) != seqs || p.block_tables.dim(0) < seqs || p.slot_mapping.dim(0) != seqs) {
    return absl::InvalidArgumentError(absl::StrCat(op, ": metadata does not match ", seqs, " sequences"));
  }
  return absl::OkStatus();
}

namespace {

bool IsVector(const Tensor& t, DType dtype, int64_t n) {
  return t.dtype == dtype && t.rank == 1 && t.dim(0) == n;
}

absl::Status CheckLogitAdjustments(const LogitAdjustments& a, int rows) {
  constexpr absl::string_view op = "Sample";
  if (!a.active()) return absl::OkStatus();
  for (const Tensor* t : {&a.repetition_penalty, &a.presence_penalty, &a.frequency_penalty}) {
    if (!IsVector(*t, DType::kFloat32, rows)) return Mismatch(op, "penalties [S] float32", *t);
  }
  for (const Tensor* t : {&a.seen_offsets, &a.banned_offsets}) {
    if (!IsVector(*t, DType::kInt32, rows + 1)) return Mismatch(op, "offsets [S + 1] int32", *t);
  }
  const int64_t seen = a.seen_tokens.rank == 1 ? a.seen_tokens.dim(0) : -1;
  if (a.seen_tokens.dtype != DType::kInt32 || seen < 0 ||
      !IsVector(a.seen_counts, DType::kInt32, seen)) {
    return Mismatch(op, "seen_tokens and seen_counts [N] int32", a.seen_counts);
  }
  if (a.banned_tokens.dtype != DType::kInt32 || a.banned_tokens.rank != 1) {
    return Mismatch(op, "banned_tokens [M] int32", a.banned_tokens);
  }
  if (!IsVector(a.saved_logits, DType::kFloat32, seen + a.banned_tokens.dim(0))) {
    return Mismatch(op, "saved_logits [N + M] float32", a.saved_logits);
  }
  return absl::OkStatus();
}

absl::Status CheckLogprobOutputs(const LogprobOutputs& l, int rows) {
  constexpr absl::string_view op = "Sample";
  if (!l.active()) return absl::OkStatus();
  if (!IsVector(l.top_n, DType::kInt32, rows)) return Mismatch(op, "top_n [S] int32", l.top_n);
  if (!IsVector(l.token_logprob, DType::kFloat32, rows)) {
    return Mismatch(op, "token_logprob [S] float32", l.token_logprob);
  }
  if (l.top_ids.dtype != DType::kInt32 || l.top_ids.rank != 2 || l.top_ids.dim(0) != rows) {
    return Mismatch(op, "top_ids [S, K] int32", l.top_ids);
  }
  if (l.top_logprobs.dtype != DType::kFloat32 || l.top_logprobs.rank != 2 ||
      l.top_logprobs.dim(0) != rows || l.top_logprobs.dim(1) != l.top_ids.dim(1)) {
    return Mismatch(op, "top_logprobs [S, K] float32", l.top_logprobs);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckSample(const SampleParams& p) {
  constexpr absl::string_view op = "Sample";
  if (p.logits.dtype != DType::kFloat32 || p.logits.rank != 2 || p.logits.dim(0) != p.num_rows) {
    return Mismatch(op, "logits [S, V] float32", p.logits);
  }
  for (const Tensor* t : {&p.temperature, &p.top_p, &p.uniform}) {
    if (t->dtype != DType::kFloat32 || t->rank != 1 || t->dim(0) != p.num_rows) {
      return Mismatch(op, "per-row parameters [S] float32", *t);
    }
  }
  for (const Tensor* t : {&p.top_k, &p.out_tokens}) {
    if (t->dtype != DType::kInt32 || t->rank != 1 || t->dim(0) != p.num_rows) {
      return Mismatch(op, "top_k and out_tokens [S] int32", *t);
    }
  }
  if (!p.min_p.empty() &&
      (p.min_p.dtype != DType::kFloat32 || p.min_p.rank != 1 || p.min_p.dim(0) != p.num_rows)) {
    return Mismatch(op, "min_p [S] float32", p.min_p);
  }
  absl::Status st = CheckLogitAdjustments(p.adjust, p.num_rows);
  if (!st.ok()) return st;
  return CheckLogprobOutputs(p.logprobs, p.num_rows);
}

absl::Status CheckMaskLogits(const MaskLogitsParams& p) {
  constexpr absl::string_view op = "MaskLogits";
  if (p.logits.dtype != DType::kFloat32 || p.logits.rank != 2) {
    return Mismatch(op, "logits [S, V] float32", p.logits);
  }
  if (p.rows.dtype != DType::kInt32 || p.rows.rank != 1) {
    return Mismatch(op, "rows [M] int32", p.rows);
  }
  const int64_t words = (p.logits.dim(1) + 31) / 32;
  if (p.masks.dtype != DType::kInt32 || p.masks.rank != 2 || p.masks.dim(0) != p.rows.dim(0) ||
      p.masks.dim(1) != words) {
    return Mismatch(op, "masks [M, ceil(V / 32)] int32", p.masks);
  }
  return absl::OkStatus();
}

}  // namespace kvserve
