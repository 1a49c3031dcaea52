// kvserve-mkmodel: writes a random-weight Llama-family checkpoint directory
// (config.json, generation_config.json, safetensors, tokenizer.json) of any
// shape, for benchmarks on real model sizes and for tests of the loader.
//
//   kvserve-mkmodel --preset llama-3.2-1b --out /models/llama-1b-random
//   kvserve-mkmodel --preset tiny-qwen2 --out /tmp/q --dtype float32 --shard_size_mb 1
//   kvserve-mkmodel --list_presets
//
// The weights are those of the built-in generator (RandomWeightSource) for the
// same config and --seed: `--preset default --seed 2024 --dtype float32`
// writes exactly the built-in default model.
#include <filesystem>
#include <fstream>
#include <iostream>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "engine/loading/default_model.h"
#include "tools/model_presets.h"
#include "tools/safetensors_writer.h"

ABSL_FLAG(std::string, out, "", "Output directory (created).");
ABSL_FLAG(std::string, preset, "tiny-llama3", "Model shape; see --list_presets.");
ABSL_FLAG(bool, list_presets, false, "List the presets and exit.");
ABSL_FLAG(std::string, dtype, "bfloat16", "Weights: bfloat16, float16 or float32.");
ABSL_FLAG(uint64_t, seed, 2024, "Weight seed (the built-in default model uses 2024).");
ABSL_FLAG(int, shard_size_mb, 2000, "Largest shard; 0 writes a single model.safetensors.");
ABSL_FLAG(int, num_layers, 0, "Override the preset's layer count (0: keep).");
ABSL_FLAG(int, max_position_embeddings, 0, "Override the context length (0: keep).");
ABSL_FLAG(bool, tokenizer, true, "Write tokenizer.json.");

namespace kvserve {
namespace {

absl::Status WriteText(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path);
  out << text << "\n";
  return out ? absl::OkStatus() : absl::UnavailableError(absl::StrCat("cannot write ", path.string()));
}

int Run() {
  if (absl::GetFlag(FLAGS_list_presets)) {
    for (const ModelPreset& p : ModelPresets()) std::cout << p.name << "\t" << p.description << "\n";
    return 0;
  }
  const std::string out = absl::GetFlag(FLAGS_out);
  if (out.empty()) {
    std::cerr << "kvserve-mkmodel: --out DIR is required\n";
    return 2;
  }
  auto preset = FindPreset(absl::GetFlag(FLAGS_preset));
  auto dtype = ParseDType(absl::GetFlag(FLAGS_dtype));
  if (!preset.ok() || !dtype.ok()) {
    std::cerr << "kvserve-mkmodel: " << (preset.ok() ? dtype.status() : preset.status()).message() << "\n";
    return 2;
  }
  ModelConfig config = preset->config;
  config.checkpoint_dtype = *dtype;
  if (absl::GetFlag(FLAGS_num_layers) > 0) config.num_layers = absl::GetFlag(FLAGS_num_layers);
  if (absl::GetFlag(FLAGS_max_position_embeddings) > 0) {
    config.max_context = absl::GetFlag(FLAGS_max_position_embeddings);
  }
  if (absl::Status s = config.Validate(); !s.ok()) {
    std::cerr << "kvserve-mkmodel: " << s.message() << "\n";
    return 2;
  }
  const absl::Time start = absl::Now();
  std::filesystem::create_directories(out);
  RandomWeightSource weights(config, absl::GetFlag(FLAGS_seed));
  std::vector<TensorToWrite> tensors;
  int64_t params = 0;
  for (const std::string& name : weights.TensorNames()) {
    TensorToWrite t;
    t.name = name;
    t.dtype = *dtype;
    t.shape = weights.ShapeOf(name);
    t.fill = [&weights, name, shape = t.shape](int64_t offset, int64_t count, float* dst) {
      weights.Fill(name, shape, offset, count, dst);
    };
    int64_t n = 1;
    for (int64_t d : t.shape) n *= d;
    params += n;
    tensors.push_back(std::move(t));
  }
  absl::Status s = WriteText(std::filesystem::path(out) / "config.json", ConfigJson(config));
  if (s.ok()) s = WriteText(std::filesystem::path(out) / "generation_config.json", GenerationConfigJson(config));
  if (s.ok()) s = WriteSafetensors(out, tensors, int64_t(absl::GetFlag(FLAGS_shard_size_mb)) << 20);
  if (s.ok() && absl::GetFlag(FLAGS_tokenizer)) {
    auto json = MakeTokenizerJson(preset->tokenizer);
    s = json.ok() ? WriteText(std::filesystem::path(out) / "tokenizer.json", *json) : json.status();
  }
  if (!s.ok()) {
    std::cerr << "kvserve-mkmodel: " << s.message() << "\n";
    return 1;
  }
  std::cerr << "kvserve-mkmodel: wrote " << preset->name << " (" << params / 1e6 << "M parameters, "
            << DTypeName(*dtype) << ") to " << out << " in "
            << absl::ToDoubleSeconds(absl::Now() - start) << " s\n";
  return 0;
}

}  // namespace
}  // namespace kvserve

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage("kvserve-mkmodel --preset NAME --out DIR [--dtype bfloat16]");
  absl::ParseCommandLine(argc, argv);
  return kvserve::Run();
}
