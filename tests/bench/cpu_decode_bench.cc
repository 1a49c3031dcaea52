// Decode throughput of the CPU engine (the default model, or --model DIR|FILE.gguf,
// weights stored per --dtype) at several batch sizes, and prefill throughput,
// next to ceilings measured in the same run on this machine:
//
//   memory ceiling   ms/step ≥ weight bytes read per step / read bandwidth
//                    (every core summing a 1 GiB buffer: tests/bench/read_ceiling.h)
//   compute ceiling  ms/step ≥ 2 · params · batch / sgemm peak (OpenBLAS, all threads, 1024³)
//
// A decode step reads every weight matrix once (in its stored dtype) and does
// 2·params FLOPs per sequence; the attention over a short context is small
// next to that. Requests go through the engine (scheduler, metadata,
// sampling), all submitted at once. Weights that fit in the last-level cache
// (the built-in model's) are labelled cache-resident: the memory ceiling does
// not apply to them.
//
//   cpu_decode_bench [--model DIR|FILE.gguf] [--dtype auto|float32|bfloat16]
//       [--batches=1,8,32] [--prompt=128] [--new_tokens=128] [--prefill=512] [--json=F]
#include <cblas.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "kernels/cpu/cpu_backend.h"
#include "nlohmann/json.hpp"
#include "prometheus/registry.h"
#include "tests/bench/decode_bench_util.h"
#include "tests/bench/read_ceiling.h"

ABSL_FLAG(std::string, model, "", "Model directory (empty: the built-in default model).");
ABSL_FLAG(std::string, batches, "1,8,32", "Batch sizes to measure, comma separated.");
ABSL_FLAG(int, prompt, 128, "Prompt tokens per request.");
ABSL_FLAG(int, new_tokens, 128, "Generated tokens per request.");
ABSL_FLAG(std::string, json, "", "Write the results here as JSON.");
ABSL_FLAG(std::string, dtype, "auto",
          "Weight matrices, as the server's --dtype on the CPU: auto, float32 or bfloat16.");
ABSL_FLAG(std::string, cpu_activations, "auto",
          "As the server's --cpu_activations: auto (int8-rounded activations for GGUF block "
          "formats) or float32.");
ABSL_FLAG(int, prefill_runs, 3, "Prefill measurements; the median is reported.");
ABSL_FLAG(bool, ceilings, true,
          "Measure the read and sgemm ceilings (false: skip them, e.g. under a profiler).");
ABSL_FLAG(int, prefill, 512,
          "Also measure one prompt of this many tokens at batch 1: prefill tokens/s (0: skip).");

namespace kvserve::bench {
namespace {

// Median OpenBLAS sgemm throughput on 1024³ with all of OpenBLAS's own
// threads (the machine's best, whatever the backend does), FLOP/s.
double SgemmPeak() {
  openblas_set_num_threads(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  constexpr int n = 1024;
  std::vector<float> a(n * n, 0.5f), b(n * n, 0.25f), c(n * n);
  std::vector<double> seconds;
  for (int i = 0; i < 7; ++i) {
    const absl::Time start = absl::Now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, n, 1.f, a.data(), n, b.data(), n,
                0.f, c.data(), n);
    seconds.push_back(absl::ToDoubleSeconds(absl::Now() - start));
  }
  openblas_set_num_threads(1);  // as the CPU backend runs it
  std::sort(seconds.begin(), seconds.end());
  return 2.0 * n * n * n / seconds[seconds.size() / 2];
}

int Run() {
  auto batches = ParseBatches(absl::GetFlag(FLAGS_batches));
  if (!batches.ok()) {
    std::fprintf(stderr, "%s\n", std::string(batches.status().message()).c_str());
    return 2;
  }
  const int prompt_len = absl::GetFlag(FLAGS_prompt), new_tokens = absl::GetFlag(FLAGS_new_tokens);
  auto source = OpenModelSource(absl::GetFlag(FLAGS_model));
  if (!source.ok()) {
    std::fprintf(stderr, "%s\n", std::string(source.status().message()).c_str());
    return 1;
  }
  const ModelConfig config = source->config;
  EngineConfig engine_config;
  engine_config.max_num_seqs = *std::max_element(batches->begin(), batches->end());
  engine_config.max_num_batched_tokens = std::max(1024, engine_config.max_num_seqs);
  auto weights = ParseCpuWeights(absl::GetFlag(FLAGS_dtype));
  if (!weights.ok()) {
    std::fprintf(stderr, "%s\n", std::string(weights.status().message()).c_str());
    return 2;
  }
  auto activations = ParseCpuActivations(absl::GetFlag(FLAGS_cpu_activations));
  if (!activations.ok()) {
    std::fprintf(stderr, "%s\n", std::string(activations.status().message()).c_str());
    return 2;
  }
  engine_config.max_num_batched_tokens =
      std::max(engine_config.max_num_batched_tokens, absl::GetFlag(FLAGS_prefill));
  auto engine = Engine::Create(engine_config, *std::move(source),
                               std::make_unique<CpuBackend>(*weights, *activations));
  if (!engine.ok()) {
    std::fprintf(stderr, "%s\n", std::string(engine.status().message()).c_str());
    return 1;
  }
  const bool ceilings = absl::GetFlag(FLAGS_ceilings);
  const double bandwidth = ceilings ? ReadCeiling() : NAN;
  const double peak = ceilings ? SgemmPeak() : NAN;
  const double params = static_cast<double>(WeightParams(config));
  // Bytes per stored parameter (float32, bf16 or Q8_0 matrices; the norms
  // are noise), times the parameters a step reads.
  const double stored_params =
      params + (config.tie_word_embeddings ? 0.0 : double(config.vocab_size) * config.hidden_size);
  const double weight_bytes = params * double((*engine)->info().weight_bytes) / stored_params;
  // Weights that fit in the last-level cache (the built-in model's) stay
  // there between steps: memory is not what bounds them.
  const long llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
  const bool cache_resident = llc > 0 && weight_bytes <= double(llc);
  std::printf("model %s: %.1f M parameters, %.0f MiB of weights read per step (--dtype %s)%s\n",
              (*engine)->info().model_name.c_str(), params / 1e6, weight_bytes / (1 << 20),
              absl::GetFlag(FLAGS_dtype).c_str(),
              cache_resident ? "; cache-resident: the memory ceiling does not bind" : "");
  std::printf("this machine: read %.1f GB/s (all cores), sgemm %.1f GFLOP/s\n", bandwidth / 1e9,
              peak / 1e9);
  std::printf("%6s %12s %10s %14s %14s %8s %10s\n", "batch", "decode tok/s", "ms/step",
              "memory bound", "compute bound", "ratio", "TTFT ms");
  std::mt19937 rng(1);
  MeasureDecode(**engine, 1, 8, 4, rng).IgnoreError();  // warm up threads and caches
  nlohmann::json out = {{"model", (*engine)->info().model_name}, {"params", params},
                        {"dtype", absl::GetFlag(FLAGS_dtype)}, {"weight_bytes_per_step", weight_bytes},
                        {"read_bytes_per_s", bandwidth}, {"sgemm_flops", peak},
                        {"cache_resident", cache_resident}, {"prompt", prompt_len},
                        {"new_tokens", new_tokens}};
  for (int batch : *batches) {
    auto r = MeasureDecode(**engine, batch, prompt_len, new_tokens, rng);
    if (!r.ok()) {
      std::fprintf(stderr, "batch %d: %s\n", batch, std::string(r.status().message()).c_str());
      return 1;
    }
    const double memory_ms = weight_bytes / bandwidth * 1e3;
    const double compute_ms = 2 * params * batch / peak * 1e3;
    const double ceiling = batch / (std::max(memory_ms, compute_ms) / 1e3);
    std::printf("%6d %12.1f %10.2f %11.2f ms %11.2f ms %7.0f%% %10.1f\n", batch,
                r->decode_tokens_per_s, r->ms_per_step, memory_ms, compute_ms,
                100 * r->decode_tokens_per_s / ceiling, r->ttft_ms);
    out["results"].push_back({{"batch", batch}, {"decode_tokens_per_s", r->decode_tokens_per_s},
                              {"ms_per_step", r->ms_per_step}, {"memory_bound_ms", memory_ms},
                              {"compute_bound_ms", compute_ms}, {"ceiling_tokens_per_s", ceiling},
                              {"ttft_ms", r->ttft_ms}});
  }
  if (const int n = absl::GetFlag(FLAGS_prefill); n > 0) {
    // The median of --prefill_runs single-prompt prefills (time to the first token).
    std::vector<double> ttft;
    for (int i = 0; i < std::max(1, absl::GetFlag(FLAGS_prefill_runs)); ++i) {
      auto r = MeasureDecode(**engine, 1, n, 2, rng);
      if (!r.ok()) {
        std::fprintf(stderr, "prefill %d: %s\n", n, std::string(r.status().message()).c_str());
        return 1;
      }
      ttft.push_back(r->ttft_ms);
    }
    std::sort(ttft.begin(), ttft.end());
    const double ms = ttft[ttft.size() / 2];
    const double tokens_per_s = n / (ms / 1e3);
    const double compute_ms = 2 * params * n / peak * 1e3;
    std::printf("prefill %d tokens: %.1f tokens/s (%.0f ms; compute bound %.0f ms, %.0f%%)\n", n,
                tokens_per_s, ms, compute_ms, 100 * compute_ms / ms);
    out["prefill"] = {{"tokens", n}, {"tokens_per_s", tokens_per_s}, {"ms", ms},
                      {"compute_bound_ms", compute_ms}};
  }
  if (!absl::GetFlag(FLAGS_json).empty()) std::ofstream(absl::GetFlag(FLAGS_json)) << out.dump(2) << "\n";
  return 0;
}

}  // namespace
}  // namespace kvserve::bench

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return kvserve::bench::Run();
}
