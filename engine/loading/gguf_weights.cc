#include "engine/loading/gguf_weights.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/strip.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "engine/loading/gguf_dequant.h"
#include "engine/loading/ggml_types.h"

namespace kvserve {
namespace {

// Hugging Face layer suffix → llama.cpp's, for the weights of one block.
constexpr std::pair<absl::string_view, absl::string_view> kLayerNames[] = {
    {"input_layernorm.weight", "attn_norm.weight"},
    {"self_attn.q_proj.weight", "attn_q.weight"},
    {"self_attn.k_proj.weight", "attn_k.weight"},
    {"self_attn.v_proj.weight", "attn_v.weight"},
    {"self_attn.q_proj.bias", "attn_q.bias"},
    {"self_attn.k_proj.bias", "attn_k.bias"},
    {"self_attn.v_proj.bias", "attn_v.bias"},
    {"self_attn.o_proj.weight", "attn_output.weight"},
    {"self_attn.o_proj.bias", "attn_output.bias"},
    {"post_attention_layernorm.weight", "ffn_norm.weight"},
    {"mlp.gate_proj.weight", "ffn_gate.weight"},
    {"mlp.up_proj.weight", "ffn_up.weight"},
    {"mlp.down_proj.weight", "ffn_down.weight"},
};

}  // namespace

std::optional<std::string> GgufTensorName(absl::string_view hf) {
  if (hf == "model.embed_tokens.weight") return "token_embd.weight";
  if (hf == "model.norm.weight") return "output_norm.weight";
  if (hf == "lm_head.weight") return "output.weight";
  constexpr absl::string_view kLayers = "model.layers.";
  if (!absl::ConsumePrefix(&hf, kLayers)) return std::nullopt;
  const size_t dot = hf.find('.');
  int layer = 0;
  if (dot == absl::string_view::npos || !absl::SimpleAtoi(hf.substr(0, dot), &layer) || layer < 0) {
    return std::nullopt;
  }
  const absl::string_view suffix = hf.substr(dot + 1);
  for (const auto& [hf_suffix, gguf_suffix] : kLayerNames) {
    if (suffix == hf_suffix) return absl::StrCat("blk.", layer, ".", gguf_suffix);
  }
  return std::nullopt;
}

void UnpermuteQkRows(const void* src, int64_t rows, size_t row_bytes, int n_head, void* dst) {
  const int64_t d = rows / n_head;
  const int64_t half = d / 2;
  for (int64_t h = 0; h < n_head; ++h) {
    for (int64_t i = 0; i < half; ++i) {
      for (int64_t j = 0; j < 2; ++j) {
        const auto* from = static_cast<const uint8_t*>(src) + (h * d + 2 * i + j) * row_bytes;
        auto* to = static_cast<uint8_t*>(dst) + (h * d + j * half + i) * row_bytes;
        std::memcpy(to, from, row_bytes);
      }
    }
  }
}

GgufWeightSource::GgufWeightSource(std::shared_ptr<const GgufFile> file, const ModelConfig& config)
    : file_(std::move(file)), config_(config), unpermute_qk_(config.model_type == "llama") {}

GgufWeightSource::~GgufWeightSource() {
  if (tensors_ == 0) return;
  KV_LOG(INFO) << file_->name() << ": " << tensors_ << " tensors, " << file_bytes_read_ / (1 << 20)
               << " MiB in the file, " << float_bytes_out_ / (1 << 20)
               << " MiB of it dequantized to float32 here, in " << seconds_ << " s (scratch "
               << (scratch_.capacity() + permuted_.capacity()) * sizeof(float) / (1 << 20)
               << " MiB)";
}

bool GgufWeightSource::Has(absl::string_view name) const {
  const std::optional<std::string> gguf = GgufTensorName(name);
  return gguf && file_->FindTensor(*gguf) != nullptr;
}

absl::StatusOr<TensorData> GgufWeightSource::Get(absl::string_view name) {
  const std::optional<std::string> gguf = GgufTensorName(name);
  const GgufTensorInfo* t = gguf ? file_->FindTensor(*gguf) : nullptr;
  if (t == nullptr) {
    return absl::NotFoundError(absl::StrCat(file_->name(), ": GGUF file has no tensor ",
                                            gguf ? *gguf : std::string("for"), " (\"", name, "\")"));
  }
  const auto start = std::chrono::steady_clock::now();
  TensorData out;
  out.shape.assign(t->dims.rbegin(), t->dims.rend());  // ggml dims are innermost first
  const int64_t numel = t->numel();
  const int64_t rows = out.shape.size() == 1 ? out.shape[0] : numel / out.shape.back();
  const int64_t cols = out.shape.size() == 1 ? 1 : out.shape.back();
  int permute_heads = 0;
  if (unpermute_qk_) {
    if (absl::EndsWith(*gguf, ".attn_q.weight") || absl::EndsWith(*gguf, ".attn_q.bias")) {
      permute_heads = config_.num_heads;
    } else if (absl::EndsWith(*gguf, ".attn_k.weight") || absl::EndsWith(*gguf, ".attn_k.bias")) {
      permute_heads = config_.num_kv_heads;
    }
  }
  if (permute_heads > 0 && rows % (2 * permute_heads) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(file_->name(), ": tensor ", *gguf, " has ", rows,
                                                   " rows, not whole heads of ", permute_heads));
  }
  // F32, F16 and BF16 are served as stored (and the block formats a backend
  // multiplies by, kernels/quant/): borrowed from the mapping, or with Q/K
  // rows moved whole into a buffer. Everything else is dequantized to float32.
  const auto type = static_cast<GgmlType>(t->type);
  std::optional<DType> as_stored;
  if (type == GgmlType::kF32) as_stored = DType::kFloat32;
  if (type == GgmlType::kF16) as_stored = DType::kFloat16;
  if (type == GgmlType::kBF16) as_stored = DType::kBFloat16;
  if (const std::optional<DType> block = BlockDTypeOfGgml(t->type);
      block && std::find(kept_.begin(), kept_.end(), *block) != kept_.end()) {
    as_stored = block;
  }
  if (as_stored) {
    out.dtype = *as_stored;
    out.data = t->data;
    out.bytes = t->bytes;
    out.owner = file_;
    if (permute_heads > 0) {
      permuted_rows_.resize(t->bytes);
      UnpermuteQkRows(t->data, rows, t->bytes / rows, permute_heads, permuted_rows_.data());
      out.data = permuted_rows_.data();
      out.owner = nullptr;
      file_->ReleasePages(t->data, t->bytes);
    }
  } else {
    scratch_.resize(numel);
    if (absl::Status s = DequantizeGgml(t->type, t->data, numel, scratch_.data()); !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(file_->name(), ": tensor ", *gguf, ": ", s.message()));
    }
    const float* result = scratch_.data();
    if (permute_heads > 0) {
      permuted_.resize(numel);
      UnpermuteQkRows(scratch_.data(), rows, cols * sizeof(float), permute_heads, permuted_.data());
      result = permuted_.data();
    }
    out.dtype = DType::kFloat32;
    out.data = result;
    out.bytes = numel * sizeof(float);
    float_bytes_out_ += out.bytes;
    file_->ReleasePages(t->data, t->bytes);
  }
  ++tensors_;
  file_bytes_read_ += t->bytes;
  seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace kvserve
