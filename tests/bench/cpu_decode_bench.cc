// Decode throughput of the CPU engine (the default model, or --model DIR) at
// several batch sizes, next to ceilings measured in the same run on this
// machine:
//
//   memory ceiling   ms/step ≥ weight bytes / memcpy bandwidth (bytes read + written)
//   compute ceiling  ms/step ≥ 2 · params · batch / sgemm peak (OpenBLAS, all threads, 1024³)
//
// A decode step reads every weight once and does 2·params FLOPs per sequence;
// the attention over a short context is small next to that. Requests go
// through the engine (scheduler, metadata, sampling), all submitted at once.
//
//   cpu_decode_bench [--model DIR] [--batches=1,8,32] [--prompt=128] [--new_tokens=128] [--json=F]
#include <cblas.h>

#include <algorithm>
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

ABSL_FLAG(std::string, model, "", "Model directory (empty: the built-in default model).");
ABSL_FLAG(std::string, batches, "1,8,32", "Batch sizes to measure, comma separated.");
ABSL_FLAG(int, prompt, 128, "Prompt tokens per request.");
ABSL_FLAG(int, new_tokens, 128, "Generated tokens per request.");
ABSL_FLAG(std::string, json, "", "Write the results here as JSON.");

namespace kvserve::bench {
namespace {

// Median memcpy bandwidth over 256 MiB buffers, bytes read + written per second.
double MemcpyBandwidth() {
  constexpr size_t kBytes = size_t(256) << 20;
  std::vector<char> a(kBytes, 1), b(kBytes, 2);
  std::vector<double> seconds;
  for (int i = 0; i < 9; ++i) {
    const absl::Time start = absl::Now();
    std::memcpy(b.data(), a.data(), kBytes);
    seconds.push_back(absl::ToDoubleSeconds(absl::Now() - start));
    a[i] = b[kBytes - 1 - i];  // keep the copies observable
  }
  std::sort(seconds.begin(), seconds.end());
  return 2.0 * kBytes / seconds[seconds.size() / 2];
}

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
  auto engine = Engine::Create(engine_config, *std::move(source), std::make_unique<CpuBackend>());
  if (!engine.ok()) {
    std::fprintf(stderr, "%s\n", std::string(engine.status().message()).c_str());
    return 1;
  }
  const double bandwidth = MemcpyBandwidth();
  const double peak = SgemmPeak();
  const double params = static_cast<double>(WeightParams(config));
  const double weight_bytes = params * 4;  // float32 on the CPU
  std::printf("model %s: %.1f M parameters, %.0f MiB of float32 weights\n",
              (*engine)->info().model_name.c_str(), params / 1e6, weight_bytes / (1 << 20));
  std::printf("this machine: memcpy %.1f GB/s (read + written), sgemm %.1f GFLOP/s\n",
              bandwidth / 1e9, peak / 1e9);
  std::printf("%6s %12s %10s %14s %14s %8s %10s\n", "batch", "decode tok/s", "ms/step",
              "memory bound", "compute bound", "ratio", "TTFT ms");
  std::mt19937 rng(1);
  MeasureDecode(**engine, 1, 8, 4, rng).IgnoreError();  // warm up threads and caches
  nlohmann::json out = {{"model", (*engine)->info().model_name}, {"params", params},
                        {"memcpy_bytes_per_s", bandwidth}, {"sgemm_flops", peak},
                        {"prompt", prompt_len}, {"new_tokens", new_tokens}};
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
  if (!absl::GetFlag(FLAGS_json).empty()) std::ofstream(absl::GetFlag(FLAGS_json)) << out.dump(2) << "\n";
  return 0;
}

}  // namespace
}  // namespace kvserve::bench

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return kvserve::bench::Run();
}
