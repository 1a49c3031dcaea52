#include "engine/model/model_registry.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/model/llama_model.h"

namespace kvserve {
namespace {

using ModelFactory = absl::StatusOr<std::unique_ptr<Model>> (*)(const ModelConfig&, WeightSource&,
                                                                Backend&, int, int);

template <typename Impl>
absl::StatusOr<std::unique_ptr<Model>> Make(const ModelConfig& config, WeightSource& weights,
                                            Backend& backend, int max_tokens, int max_samples) {
  auto model = Impl::Create(config, weights, backend, max_tokens, max_samples);
  if (!model.ok()) return model.status();
  return std::unique_ptr<Model>(std::move(*model));
}

struct Registration {
  const char* model_type;
  ModelFactory create;
};

// Mistral and Qwen2 are Llama-shaped: the differences (sliding window, q/k/v
// bias) are ModelConfig fields that LlamaModel honours.
constexpr Registration kRegistry[] = {
    {"llama", &Make<LlamaModel>},
    {"mistral", &Make<LlamaModel>},
    {"qwen2", &Make<LlamaModel>},
};

}  // namespace

absl::StatusOr<std::unique_ptr<Model>> CreateModel(const ModelConfig& config,
                                                   WeightSource& weights, Backend& backend,
                                                   int max_tokens, int max_samples) {
  // An empty model_type is the built-in default model, which is Llama-shaped.
  const std::string type = config.model_type.empty() ? "llama" : config.model_type;
  for (const Registration& r : kRegistry) {
    if (type == r.model_type) return r.create(config, weights, backend, max_tokens, max_samples);
  }
  return absl::InvalidArgumentError(absl::StrCat("model_type \"", type,
                                                 "\" is not supported; supported: ",
                                                 absl::StrJoin(RegisteredModelTypes(), ", ")));
}

std::vector<std::string> RegisteredModelTypes() {
  std::vector<std::string> types;
  for (const Registration& r : kRegistry) types.push_back(r.model_type);
  std::sort(types.begin(), types.end());
  return types;
}

}  // namespace kvserve
