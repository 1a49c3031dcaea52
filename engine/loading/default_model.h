// The built-in default model: a small Llama-shaped network whose weights are
// generated in-process from a fixed seed, so the server runs with no
// download. Its text is noise; it exists to exercise every layer end to end.
// Text input uses the byte tokenizer (one token per byte).
#pragma once

#include "absl/strings/string_view.h"
#include <string>
#include <vector>

#include "engine/model/model_config.h"
#include "engine/model/weight_source.h"

namespace kvserve {

inline constexpr char kDefaultModelName[] = "kvserve-default-random";

/// 6 layers, hidden 512, 8 query / 2 KV heads of dim 64, vocab 320 (bytes at
/// 3..258), context 2048.
ModelConfig DefaultModelConfig();

/// Deterministic pseudo-random weights for any config, by tensor name: the
/// same name and seed always give the same values on every platform. Element
/// i of a tensor depends only on (seed, name, i), so a tensor can be made in
/// pieces (kvserve-mkmodel writes multi-GB checkpoints chunk by chunk).
class RandomWeightSource final : public WeightSource {
 public:
  RandomWeightSource(ModelConfig config, uint64_t seed) : config_(std::move(config)), seed_(seed) {}
  bool Has(absl::string_view name) const override;
  absl::StatusOr<TensorData> Get(absl::string_view name) override;
  std::string Describe() const override { return kDefaultModelName; }

  /// The Hugging Face shape of `name` for this config; empty if unknown.
  std::vector<int64_t> ShapeOf(absl::string_view name) const;
  /// Elements [offset, offset + count) of tensor `name` of `shape`.
  void Fill(absl::string_view name, const std::vector<int64_t>& shape, int64_t offset,
            int64_t count, float* out) const;
  /// Every tensor name the config calls for, in checkpoint order.
  std::vector<std::string> TensorNames() const;

 private:
  ModelConfig config_;
  uint64_t seed_;
  std::vector<float> scratch_;
};

}  // namespace kvserve
