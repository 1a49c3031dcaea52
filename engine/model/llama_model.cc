#include "engine/model/llama_model.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "engine/model/rope.h"

namespace kvserve {

absl::StatusOr<std::unique_ptr<LlamaModel>> LlamaModel::Create(const ModelConfig& config,
                                                               WeightSource& weights,
                                                               Backend& backend, int max_tokens,
                                                               int max_samples) {
  RETURN_IF_ERROR(config.Validate());
  std::unique_ptr<LlamaModel> model(new LlamaModel(config, backend));
  ASSIGN_OR_RETURN(model->weights_, LoadLlamaWeights(config, weights, backend));
  model->attention_shape_ = AttentionShape{config.num_heads, config.num_kv_heads, config.head_dim,
                                           1.f / std::sqrt(static_cast<float>(config.head_dim))};
  RETURN_IF_ERROR(model->AllocateWorkspace(max_tokens, max_samples));
  RETURN_IF_ERROR(backend.Reserve(model->Limits()));
  return model;
}

StepLimits LlamaModel::Limits() const {
  StepLimits limits;
  limits.max_tokens = max_tokens_;
  // A step holds each sequence at most once and samples at most once per
  // sequence; the engine passes max_num_seqs as max_samples.
  limits.max_seqs = std::min(max_tokens_, max_samples_);
  limits.max_context = config_.max_context;
  limits.hidden_size = config_.hidden_size;
  limits.attention = attention_shape_;
  const DType dt = backend_.compute_dtype();
  for (const LayerWeights& l : weights_.layers) {
    // Matrices kept as parts (a backend that borrows host weights) plan nothing.
    if (l.qkv.size() == 1) limits.linears.push_back({l.qkv[0], l.qkv_bias, dt, max_tokens_});
    limits.linears.push_back({l.o_proj, l.o_bias, dt, max_tokens_});
    if (l.gate_up.size() == 1) {
      limits.linears.push_back({l.gate_up[0], l.gate_up_bias, dt, max_tokens_});
    }
    limits.linears.push_back({l.down, l.down_bias, dt, max_tokens_});
  }
  limits.linears.push_back({weights_.lm_head, Tensor(), DType::kFloat32, max_samples_});
  return limits;
}

absl::Status LlamaModel::AllocateWorkspace(int max_tokens, int max_samples) {
  const ModelConfig& c = config_;
  max_tokens_ = max_tokens;
  max_samples_ = max_samples;
  const DType dt = backend_.compute_dtype();
  auto alloc = [&](DType dtype, std::initializer_list<int64_t> shape) -> absl::StatusOr<Tensor> {
    Tensor probe(nullptr, dtype, shape);
    ASSIGN_OR_RETURN(DeviceBufferPtr buffer, backend_.Allocate(probe.bytes()));
    probe.data = buffer->data();
    workspace_bytes_ += probe.bytes();
    storage_.push_back(std::move(buffer));
    return probe;
  };
  const int64_t t = max_tokens, hidden = c.hidden_size, d = c.head_dim;
  ASSIGN_OR_RETURN(residual_, alloc(dt, {t, hidden}));
  ASSIGN_OR_RETURN(normed_, alloc(dt, {t, hidden}));
  ASSIGN_OR_RETURN(qkv_, alloc(dt, {t, int64_t(c.num_heads + 2 * c.num_kv_heads) * d}));
  ASSIGN_OR_RETURN(q_, alloc(dt, {t, c.num_heads, d}));
  ASSIGN_OR_RETURN(k_, alloc(dt, {t, c.num_kv_heads, d}));
  ASSIGN_OR_RETURN(v_, alloc(dt, {t, c.num_kv_heads, d}));
  ASSIGN_OR_RETURN(attn_, alloc(dt, {t, c.num_heads, d}));
  ASSIGN_OR_RETURN(proj_, alloc(dt, {t, hidden}));
  ASSIGN_OR_RETURN(gate_up_, alloc(dt, {t, 2 * int64_t(c.intermediate_size)}));
  ASSIGN_OR_RETURN(act_, alloc(dt, {t, c.intermediate_size}));
  ASSIGN_OR_RETURN(last_hidden_, alloc(dt, {max_samples, hidden}));
  ASSIGN_OR_RETURN(logits_, alloc(DType::kFloat32, {max_samples, c.vocab_size}));
  const std::vector<float> table = BuildRopeTable(c, c.max_context);
  ASSIGN_OR_RETURN(rope_table_, alloc(DType::kFloat32, {c.max_context, d}));
  RETURN_IF_ERROR(backend_.CopyToDevice(table.data(), table.size() * sizeof(float), rope_table_.data));
  return absl::OkStatus();
}

absl::Status LlamaModel::Attention(const StepBatch& b, const PagedKvCache& cache, Tensor q,
                                   Tensor k, Tensor v, Tensor out) {
  const int tp = b.num_prefill_tokens;
  if (b.num_prefill_seqs > 0) {
    PrefillAttentionParams p;
    p.q = q.Rows(0, tp);
    p.k = k.Rows(0, tp);
    p.v = v.Rows(0, tp);
    p.out = out.Rows(0, tp);
    p.cu_seqlens_q = b.prefill_cu_seqlens;
    p.context_lens = b.prefill_context_lens;
    p.block_tables = b.prefill_block_tables;
    p.slot_mapping = b.slot_mapping.Rows(0, tp);
    p.cache = cache;
    p.shape = attention_shape_;
    p.num_seqs = b.num_prefill_seqs;
    p.max_q_len = b.prefill_max_q_len;
    p.max_context_len = b.prefill_max_context;
    p.kv_written = true;
    RETURN_IF_ERROR(backend_.PrefillAttention(p));
  }
  if (b.num_decode_seqs > 0) {
    const int td = b.num_decode_seqs;
    DecodeAttentionParams p;
    p.q = q.Rows(tp, td);
    p.k = k.Rows(tp, td);
    p.v = v.Rows(tp, td);
    p.out = out.Rows(tp, td);
    p.context_lens = b.decode_context_lens;
    p.block_tables = b.decode_block_tables;
    p.slot_mapping = b.slot_mapping.Rows(tp, td);
    p.cache = cache;
    p.shape = attention_shape_;
    p.num_seqs = td;
    p.max_context_len = b.decode_max_context;
    p.kv_written = true;
    RETURN_IF_ERROR(backend_.DecodeAttention(p));
  }
  return absl::OkStatus();
}

absl::StatusOr<Tensor> LlamaModel::Forward(const StepBatch& b, const KvCache& cache) {
  const ModelConfig& c = config_;
  const int t = b.num_tokens;
  if (t <= 0 || t > max_tokens_ || b.num_samples > max_samples_ || b.num_samples < 0) {
    return absl::InvalidArgumentError(absl::StrCat("step of ", t, " tokens and ", b.num_samples,
                                                   " samples exceeds the workspace (", max_tokens_,
                                                   ", ", max_samples_, ")"));
  }
  Backend& be = backend_;
  Tensor residual = residual_.Rows(0, t), normed = normed_.Rows(0, t);
  Tensor qkv = qkv_.Rows(0, t), q = q_.Rows(0, t), k = k_.Rows(0, t), v = v_.Rows(0, t);
  Tensor attn = attn_.Rows(0, t), proj = proj_.Rows(0, t);
  Tensor gate_up = gate_up_.Rows(0, t), act = act_.Rows(0, t);
  const Tensor attn_flat = attn.Reshape({t, int64_t(c.num_heads) * c.head_dim});

  RETURN_IF_ERROR(be.Embedding(b.token_ids, weights_.embed, residual));
  for (int i = 0; i < c.num_layers; ++i) {
    const LayerWeights& l = weights_.layers[i];
    // Pre-norm, from layer 1 on with the previous MLP output added, then QKV.
    RETURN_IF_ERROR(be.AddRmsNormLinear(residual, i == 0 ? Tensor() : proj, l.input_norm,
                                        c.rms_norm_eps, normed, l.qkv, l.qkv_bias, qkv));
    // The rotation also writes the step's K/V into the cache (one pass over
    // them); the attention ops are told so.
    RopeSplitParams rope;
    rope.qkv = qkv;
    rope.positions = b.positions;
    rope.cos_sin = rope_table_;
    rope.q_out = q;
    rope.k_out = k;
    rope.v_out = v;
    rope.shape = attention_shape_;
    rope.slot_mapping = b.slot_mapping;
    rope.cache = cache.layer(i);
    RETURN_IF_ERROR(be.RopeSplitQkv(rope));
    RETURN_IF_ERROR(Attention(b, cache.layer(i), q, k, v, attn));
    RETURN_IF_ERROR(be.Linear(attn_flat, l.o_proj, l.o_bias, proj));
    RETURN_IF_ERROR(be.AddRmsNormLinear(residual, proj, l.post_norm, c.rms_norm_eps, normed,
                                        l.gate_up, l.gate_up_bias, gate_up));
    RETURN_IF_ERROR(be.SiluMulLinear(gate_up, act, l.down, l.down_bias, proj));
  }
  RETURN_IF_ERROR(be.AddRmsNorm(residual, proj, weights_.final_norm, c.rms_norm_eps, normed));
  const int s = b.num_samples;
  if (s == 0) return logits_.Rows(0, 0);
  Tensor last = last_hidden_.Rows(0, s);
  RETURN_IF_ERROR(be.GatherRows(normed, b.sample_rows, last));
  Tensor logits = logits_.Rows(0, s);
  RETURN_IF_ERROR(be.Linear(last, weights_.lm_head, Tensor(), logits));
  return logits;
}

}  // namespace kvserve
