#include "engine/loading/default_model.h"

#include <algorithm>
#include <cmath>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace kvserve {
namespace {

uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t HashName(absl::string_view name, uint64_t seed) {
  uint64_t h = 1469598103934665603ull ^ seed;  // FNV-1a
  for (char c : name) h = (h ^ static_cast<uint8_t>(c)) * 1099511628211ull;
  return h;
}

}  // namespace

ModelConfig DefaultModelConfig() {
  ModelConfig c;
  c.model_type = "llama";
  c.architecture = "LlamaForCausalLM";
  c.vocab_size = 320;
  c.hidden_size = 512;
  c.intermediate_size = 1408;
  c.num_layers = 6;
  c.num_heads = 8;
  c.num_kv_heads = 2;
  c.head_dim = 64;
  c.max_context = 2048;
  c.rms_norm_eps = 1e-5f;
  c.rope_theta = 10000.0;
  c.tie_word_embeddings = false;
  c.bos_token_id = 1;
  c.eos_token_ids = {2};
  c.checkpoint_dtype = DType::kFloat32;
  return c;
}

std::vector<int64_t> RandomWeightSource::ShapeOf(absl::string_view name) const {
  const ModelConfig& c = config_;
  const int64_t hidden = c.hidden_size, q = int64_t(c.num_heads) * c.head_dim;
  const int64_t kv = int64_t(c.num_kv_heads) * c.head_dim, inter = c.intermediate_size;
  if (name == "model.embed_tokens.weight" || name == "lm_head.weight") return {c.vocab_size, hidden};
  if (name == "model.norm.weight" || absl::EndsWith(name, "layernorm.weight")) return {hidden};
  if (absl::EndsWith(name, "q_proj.weight")) return {q, hidden};
  if (absl::EndsWith(name, "k_proj.weight") || absl::EndsWith(name, "v_proj.weight")) return {kv, hidden};
  if (absl::EndsWith(name, "q_proj.bias")) return {q};
  if (absl::EndsWith(name, "k_proj.bias") || absl::EndsWith(name, "v_proj.bias")) return {kv};
  if (absl::EndsWith(name, "o_proj.weight")) return {hidden, q};
  if (absl::EndsWith(name, "o_proj.bias") || absl::EndsWith(name, "down_proj.bias")) return {hidden};
  if (absl::EndsWith(name, "gate_proj.bias") || absl::EndsWith(name, "up_proj.bias")) return {inter};
  if (absl::EndsWith(name, "gate_proj.weight") || absl::EndsWith(name, "up_proj.weight")) return {inter, hidden};
  if (absl::EndsWith(name, "down_proj.weight")) return {hidden, inter};
  return {};
}

bool RandomWeightSource::Has(absl::string_view name) const { return !ShapeOf(name).empty(); }

void RandomWeightSource::Fill(absl::string_view name, const std::vector<int64_t>& shape,
                              int64_t offset, int64_t count, float* out) const {
  const uint64_t base = HashName(name, seed_);
  // SplitMix64 is a counter-based generator: output i mixes base + (i+1)·γ.
  auto uniform = [&](int64_t i) {
    uint64_t state = base + static_cast<uint64_t>(i) * 0x9e3779b97f4a7c15ull;
    return static_cast<float>(SplitMix64(state) >> 40) / float(1 << 24);
  };
  if (shape.size() == 1) {
    // Norm weights near 1 and biases near 0, like a trained model's.
    const bool is_norm = absl::EndsWith(name, "norm.weight");
    for (int64_t i = 0; i < count; ++i) {
      const float u = uniform(offset + i) - 0.5f;
      out[i] = is_norm ? 1.f + 0.2f * u : 0.1f * u;
    }
    return;
  }
  // Uniform with std 2/sqrt(fan_in): large enough for clear logit margins.
  const float half_width = std::sqrt(3.f) * 2.f / std::sqrt(static_cast<float>(shape[1]));
  auto fill = [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) out[i] = (2.f * uniform(offset + i) - 1.f) * half_width;
  };
  // Each value depends only on its index, so threads give the same tensor:
  // a 1B-shaped model's 1.2 G values took most of the ~18 s its benchmark
  // spent loading on the GPU machine (device time) with one thread.
  constexpr int64_t kPerThread = int64_t(1) << 22;
  const int threads = static_cast<int>(std::min<int64_t>(
      std::max(1u, std::thread::hardware_concurrency()), (count + kPerThread - 1) / kPerThread));
  if (threads <= 1) return fill(0, count);
  const int64_t per = (count + threads - 1) / threads;
  std::vector<std::thread> workers;
  workers.reserve(threads - 1);
  int64_t done_from = count;  // [done_from, count) is some thread's
  for (int t = threads - 1; t >= 1; --t) {
    const int64_t begin = std::min(count, t * per);
    try {
      workers.emplace_back(fill, begin, done_from);
    } catch (...) {
      break;  // no more threads: the rest is filled here
    }
    done_from = begin;
  }
  fill(0, done_from);
  for (std::thread& w : workers) w.join();
}

absl::StatusOr<TensorData> RandomWeightSource::Get(absl::string_view name) {
  std::vector<int64_t> shape = ShapeOf(name);
  if (shape.empty()) {
    return absl::NotFoundError(absl::StrCat("no built-in tensor \"", std::string(name), "\""));
  }
  TensorData out;
  out.dtype = DType::kFloat32;
  out.shape = shape;
  const int64_t n = out.numel();
  scratch_.resize(n);
  Fill(name, shape, 0, n, scratch_.data());
  out.data = scratch_.data();
  out.bytes = n * sizeof(float);
  return out;
}

std::vector<std::string> RandomWeightSource::TensorNames() const {
  const ModelConfig& c = config_;
  std::vector<std::string> names = {"model.embed_tokens.weight"};
  for (int i = 0; i < c.num_layers; ++i) {
    const std::string p = absl::StrCat("model.layers.", i, ".");
    names.push_back(p + "input_layernorm.weight");
    for (const char* proj : {"q_proj", "k_proj", "v_proj"}) {
      names.push_back(absl::StrCat(p, "self_attn.", proj, ".weight"));
      if (c.qkv_bias) names.push_back(absl::StrCat(p, "self_attn.", proj, ".bias"));
    }
    names.push_back(p + "self_attn.o_proj.weight");
    if (c.o_bias) names.push_back(p + "self_attn.o_proj.bias");
    names.push_back(p + "post_attention_layernorm.weight");
    for (const char* proj : {"gate_proj", "up_proj", "down_proj"}) {
      names.push_back(absl::StrCat(p, "mlp.", proj, ".weight"));
      if (c.mlp_bias) names.push_back(absl::StrCat(p, "mlp.", proj, ".bias"));
    }
  }
  names.push_back("model.norm.weight");
  if (!c.tie_word_embeddings) names.push_back("lm_head.weight");
  return names;
}

}  // namespace kvserve
