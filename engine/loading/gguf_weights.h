// The weights of a GGUF file, served under the Hugging Face names the model
// asks for (model.layers.N.self_attn.q_proj.weight ← blk.N.attn_q.weight),
// with ggml's dims reversed into row-major shapes, block formats dequantized
// to float32 unless kept as stored (SetKeptBlockDTypes), and llama's Q/K rows
// put back in Hugging Face order. Tensors served as stored point into the
// mapping, which they keep alive (TensorData::owner).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/loading/gguf_file.h"
#include "engine/model/model_config.h"
#include "engine/model/weight_source.h"

namespace kvserve {

/// The GGUF tensor name for a Hugging Face one, or nullopt for a name GGUF
/// files do not have.
std::optional<std::string> GgufTensorName(absl::string_view hf_name);

class GgufWeightSource final : public WeightSource {
 public:
  GgufWeightSource(std::shared_ptr<const GgufFile> file, const ModelConfig& config);
  /// Logs what was dequantized and how long it took.
  ~GgufWeightSource() override;

  bool Has(absl::string_view name) const override;
  /// F32/F16/BF16 (and kept block-format) tensors are borrowed from the
  /// mapping; anything converted (dequantized, or Q/K rows un-permuted) lives
  /// in a scratch buffer reused by the next Get, and its pages of the mapping
  /// are released from the resident set.
  absl::StatusOr<TensorData> Get(absl::string_view name) override;
  std::string Describe() const override { return file_->name(); }
  void SetKeptBlockDTypes(std::vector<DType> dtypes) override { kept_ = std::move(dtypes); }

 private:
  std::shared_ptr<const GgufFile> file_;
  ModelConfig config_;
  bool unpermute_qk_;  // llama.cpp's converter permutes llama Q/K rows; qwen2 is left as is
  std::vector<DType> kept_;  // block formats served as stored
  std::vector<float> scratch_;
  std::vector<float> permuted_;
  std::vector<uint8_t> permuted_rows_;  // Q/K rows of a tensor served as stored
  // Loading statistics, for the log line.
  int tensors_ = 0;
  uint64_t file_bytes_read_ = 0;
  uint64_t float_bytes_out_ = 0;
  double seconds_ = 0;
};

/// Undoes llama.cpp's `permute(w, n_head)`: GGUF row h*D + 2i + j holds
/// Hugging Face row h*D + j*D/2 + i (D = rows / n_head). `src` and `dst` are
/// `rows` rows of `row_bytes` each (float32 or whole Q8_0 blocks) and must
/// not overlap.
void UnpermuteQkRows(const void* src, int64_t rows, size_t row_bytes, int n_head, void* dst);

}  // namespace kvserve
