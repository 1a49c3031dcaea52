#include "engine/model/llama_weights.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"

namespace kvserve {
namespace {

class WeightLoader {
 public:
  WeightLoader(WeightSource& source, Backend& backend, LlamaWeights& weights)
      : source_(source), backend_(backend), weights_(weights) {}

  // The [rows, cols] matrix (or [rows] vector when cols == 0) stacked along
  // rows from the named parts, in order. Vectors (norms, biases) are kept in
  // the compute dtype and fused; matrices in the dtype the backend keeps for
  // their stored dtype, fused into one tensor unless the backend borrows
  // host weights, where each part is its own tensor (borrowed in place when
  // the source owns it and it needs no conversion).
  absl::StatusOr<std::vector<Tensor>> Parts(
      const std::vector<std::pair<std::string, int64_t>>& parts, int64_t cols) {
    const bool apart = cols > 0 && backend_.BorrowsHostWeights();
    if (!apart) {
      ASSIGN_OR_RETURN(Tensor fused, Fused(parts, cols));
      return std::vector<Tensor>{fused};
    }
    std::vector<Tensor> out;
    for (const auto& part : parts) {
      ASSIGN_OR_RETURN(Tensor t, Fused({part}, cols));
      out.push_back(t);
    }
    return out;
  }

  absl::StatusOr<Tensor> Fused(const std::vector<std::pair<std::string, int64_t>>& parts,
                               int64_t cols) {
    int64_t rows = 0;
    for (const auto& part : parts) rows += part.second;
    // The first part decides the storage dtype; it stays valid until the next Get.
    ASSIGN_OR_RETURN(TensorData src, source_.Get(parts.front().first));
    RETURN_IF_ERROR(CheckShape(parts.front().first, src, parts.front().second, cols));
    DType dtype = backend_.compute_dtype();
    if (cols > 0) {
      dtype = backend_.MatrixWeightDType(src.dtype);
      // Block formats need rows of whole blocks; any other width computes in float32.
      if (IsBlockDType(dtype) && cols % DTypeBlockElems(dtype) != 0) dtype = DType::kFloat32;
    }
    const size_t bytes = DTypeBytes(dtype, rows * std::max<int64_t>(cols, 1));
    if (parts.size() == 1 && cols > 0 && src.owner != nullptr && dtype == src.dtype &&
        backend_.BorrowsHostWeights()) {
      weights_.borrowed.push_back(src.owner);
      weights_.bytes += bytes;
      weights_.borrowed_bytes += bytes;
      return Tensor(const_cast<void*>(src.data), dtype, {rows, cols});
    }
    ASSIGN_OR_RETURN(DeviceBufferPtr buffer, backend_.Allocate(bytes));
    Tensor all = cols > 0 ? buffer->View(dtype, {rows, cols}) : buffer->View(dtype, {rows});
    int64_t row = 0;
    for (size_t i = 0; i < parts.size(); ++i) {
      const auto& [name, part_rows] = parts[i];
      if (i > 0) {
        ASSIGN_OR_RETURN(src, source_.Get(name));
        RETURN_IF_ERROR(CheckShape(name, src, part_rows, cols));
      }
      RETURN_IF_ERROR(backend_.Upload(src.data, src.dtype, all.Rows(row, part_rows)));
      row += part_rows;
    }
    weights_.bytes += bytes;
    weights_.storage.push_back(std::move(buffer));
    return all;
  }

  absl::StatusOr<Tensor> One(const std::string& name, int64_t rows, int64_t cols) {
    return Fused({{name, rows}}, cols);
  }

 private:
  absl::Status CheckShape(const std::string& name, const TensorData& src, int64_t rows,
                          int64_t cols) {
    std::vector<int64_t> expected = {rows};
    if (cols > 0) expected.push_back(cols);
    if (src.shape == expected) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(
        source_.Describe(), ": tensor \"", name, "\" has shape [", absl::StrJoin(src.shape, ", "),
        "], the config needs [", absl::StrJoin(expected, ", "), "]"));
  }

  WeightSource& source_;
  Backend& backend_;
  LlamaWeights& weights_;
};

// The block formats the source should serve as stored: those the backend
// keeps, or all when its Upload dequantizes them (the GPU: no float32 copy of
// each tensor on the host).
std::vector<DType> KeptBlockDTypes(const Backend& backend) {
  std::vector<DType> kept;
  for (DType d : {DType::kQ8_0, DType::kQ4_0, DType::kQ4_1, DType::kQ5_0, DType::kQ5_1,
                  DType::kQ2_K, DType::kQ3_K, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K}) {
    if (backend.MatrixWeightDType(d) == d || backend.UploadsFromBlockDTypes()) kept.push_back(d);
  }
  return kept;
}

}  // namespace

absl::StatusOr<LlamaWeights> LoadLlamaWeights(const ModelConfig& c, WeightSource& source,
                                              Backend& backend) {
  LlamaWeights w;
  source.SetKeptBlockDTypes(KeptBlockDTypes(backend));
  WeightLoader load(source, backend, w);
  const int64_t hidden = c.hidden_size;
  const int64_t q_rows = int64_t(c.num_heads) * c.head_dim;
  const int64_t kv_rows = int64_t(c.num_kv_heads) * c.head_dim;
  const int64_t inter = c.intermediate_size;

  ASSIGN_OR_RETURN(w.embed, load.One("model.embed_tokens.weight", c.vocab_size, hidden));
  ASSIGN_OR_RETURN(w.final_norm, load.One("model.norm.weight", hidden, 0));
  if (c.tie_word_embeddings) {
    w.lm_head = w.embed;
  } else {
    ASSIGN_OR_RETURN(w.lm_head, load.One("lm_head.weight", c.vocab_size, hidden));
  }
  for (int i = 0; i < c.num_layers; ++i) {
    const std::string p = absl::StrCat("model.layers.", i, ".");
    LayerWeights l;
    ASSIGN_OR_RETURN(l.input_norm, load.One(p + "input_layernorm.weight", hidden, 0));
    ASSIGN_OR_RETURN(l.qkv, load.Parts({{p + "self_attn.q_proj.weight", q_rows},
                                        {p + "self_attn.k_proj.weight", kv_rows},
                                        {p + "self_attn.v_proj.weight", kv_rows}},
                                       hidden));
    if (c.qkv_bias) {
      ASSIGN_OR_RETURN(l.qkv_bias, load.Fused({{p + "self_attn.q_proj.bias", q_rows},
                                               {p + "self_attn.k_proj.bias", kv_rows},
                                               {p + "self_attn.v_proj.bias", kv_rows}},
                                              0));
    }
    ASSIGN_OR_RETURN(l.o_proj, load.One(p + "self_attn.o_proj.weight", hidden, q_rows));
    if (c.o_bias) {
      ASSIGN_OR_RETURN(l.o_bias, load.One(p + "self_attn.o_proj.bias", hidden, 0));
    }
    ASSIGN_OR_RETURN(l.post_norm, load.One(p + "post_attention_layernorm.weight", hidden, 0));
    ASSIGN_OR_RETURN(l.gate_up, load.Parts({{p + "mlp.gate_proj.weight", inter},
                                            {p + "mlp.up_proj.weight", inter}},
                                           hidden));
    ASSIGN_OR_RETURN(l.down, load.One(p + "mlp.down_proj.weight", hidden, inter));
    if (c.mlp_bias) {
      ASSIGN_OR_RETURN(l.gate_up_bias, load.Fused({{p + "mlp.gate_proj.bias", inter},
                                                   {p + "mlp.up_proj.bias", inter}},
                                                  0));
      ASSIGN_OR_RETURN(l.down_bias, load.One(p + "mlp.down_proj.bias", hidden, 0));
    }
    w.layers.push_back(l);
  }
  RETURN_IF_ERROR(backend.Synchronize());
  return w;
}

}  // namespace kvserve
