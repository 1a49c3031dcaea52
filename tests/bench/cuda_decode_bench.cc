// Decode throughput of the CUDA engine on a Llama-3.2-1B-shaped model with
// random bf16 weights (hidden 2048, 16 layers, 32/8 heads of 64, intermediate
// 8192, vocab 128256, tied embeddings), at batch 1 and 32, next to the
// memory roofline measured in the same run:
//
//   ceiling ms/step = weight bytes / device-to-device copy bandwidth
//
// (every decode step reads every weight once; the copy moves bytes read +
// bytes written). Requests go through the engine (scheduler, metadata
// uploads, sampling: the serving path), all submitted at once with the same
// prompt length, greedy, EOS ignored; decode tokens/s counts the tokens after
// every request's first one, over the time from the last first token to the
// last token.
//
//   cuda_decode_bench [--batches=1,32] [--prompt=128] [--new_tokens=128] [--json=report.json]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "engine/core/engine.h"
#include "engine/loading/default_model.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/device_info.h"
#include "nlohmann/json.hpp"
#include "prometheus/registry.h"
#include "tests/bench/decode_bench_util.h"
#include "tools/model_presets.h"

ABSL_FLAG(std::string, batches, "1,32", "Batch sizes to measure, comma separated.");
ABSL_FLAG(int, prompt, 128, "Prompt tokens per request.");
ABSL_FLAG(int, new_tokens, 128, "Generated tokens per request.");
ABSL_FLAG(std::string, json, "", "Write the results here as JSON.");
ABSL_FLAG(std::string, dtype, "bfloat16", "Compute dtype of the CUDA backend.");

namespace kvserve {
namespace {

// The llama-3.2-1b preset (kvserve-mkmodel's), with a short context: the
// benchmark's sequences stay well inside it, and the shape is what matters.
ModelConfig Llama32_1B() {
  ModelConfig c = FindPreset("llama-3.2-1b")->config;
  c.max_context = 4096;
  return c;
}

// Median device-to-device copy bandwidth (bytes read + written per second)
// over 1 GiB buffers.
double MeasureCopyBandwidth() {
  constexpr size_t kBytes = size_t(1) << 30;
  void *a = nullptr, *b = nullptr;
  if (cudaMalloc(&a, kBytes) != cudaSuccess || cudaMalloc(&b, kBytes) != cudaSuccess) return 0;
  cudaMemset(a, 1, kBytes);
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  std::vector<float> ms;
  for (int i = 0; i < 13; ++i) {
    cudaEventRecord(start);
    cudaMemcpyAsync(b, a, kBytes, cudaMemcpyDeviceToDevice);
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    float t = 0;
    cudaEventElapsedTime(&t, start, stop);
    if (i >= 3) ms.push_back(t);  // the first runs warm up
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaFree(a);
  cudaFree(b);
  std::sort(ms.begin(), ms.end());
  return 2.0 * kBytes / (ms[ms.size() / 2] * 1e-3);
}

int Run() {
  if (cuda::DeviceCount() == 0) {
    std::fprintf(stderr, "cuda_decode_bench: %s\n", cuda::DescribeDevice().c_str());
    return 2;
  }
  auto batches = bench::ParseBatches(absl::GetFlag(FLAGS_batches));
  if (!batches.ok()) {
    std::fprintf(stderr, "%s\n", std::string(batches.status().message()).c_str());
    return 2;
  }
  auto dtype = ParseDType(absl::GetFlag(FLAGS_dtype));
  if (!dtype.ok()) {
    std::fprintf(stderr, "%s\n", std::string(dtype.status().message()).c_str());
    return 2;
  }
  const int prompt_len = absl::GetFlag(FLAGS_prompt), new_tokens = absl::GetFlag(FLAGS_new_tokens);
  const int max_batch = *std::max_element(batches->begin(), batches->end());

  const double copy_bw = MeasureCopyBandwidth();
  const ModelConfig config = Llama32_1B();
  const double weight_bytes = double(bench::WeightParams(config)) * DTypeSize(*dtype);
  const double ceiling_ms = copy_bw > 0 ? weight_bytes / copy_bw * 1e3 : 0;

  cuda::CudaBackendOptions options;
  options.dtype = *dtype;
  auto backend = cuda::CudaBackend::Create(options);
  if (!backend.ok()) {
    std::fprintf(stderr, "%s\n", backend.status().ToString().c_str());
    return 1;
  }
  const std::string device = (*backend)->device_name();
  EngineConfig ec;
  ec.max_num_seqs = std::max(max_batch, 1);
  ec.max_num_batched_tokens = std::max(4096, max_batch);
  ModelSource source;
  source.name = "llama-3.2-1b-shaped-random";
  source.config = config;
  source.weights = std::make_unique<RandomWeightSource>(config, /*seed=*/1);
  const absl::Time load_start = absl::Now();
  auto engine = Engine::Create(ec, std::move(source), *std::move(backend));
  if (!engine.ok()) {
    std::fprintf(stderr, "%s\n", engine.status().ToString().c_str());
    return 1;
  }
  const double load_s = absl::ToDoubleSeconds(absl::Now() - load_start);
  std::mt19937 rng(5);

  nlohmann::json report;
  report["device"] = device;
  report["model"] = "Llama-3.2-1B-shaped, random weights";
  report["dtype"] = std::string(DTypeName(*dtype));
  report["prompt_tokens"] = prompt_len;
  report["new_tokens"] = new_tokens;
  report["weight_bytes"] = weight_bytes;
  report["copy_bandwidth_gb_s"] = copy_bw / 1e9;
  report["roofline_ms_per_step"] = ceiling_ms;
  report["load_s"] = load_s;
  std::printf("device %s; weights %.2f GB %s (loaded in %.1f s)\n", device.c_str(),
              weight_bytes / 1e9, std::string(DTypeName(*dtype)).c_str(), load_s);
  std::printf("device-to-device copy %.0f GB/s -> roofline %.3f ms/step\n", copy_bw / 1e9, ceiling_ms);
  for (int batch : *batches) {
    // Warm-up at this batch size: cuBLASLt plans for these shapes, first launches.
    if (auto warm = bench::MeasureDecode(**engine, batch, prompt_len, 8, rng); !warm.ok()) {
      std::fprintf(stderr, "warm-up: %s\n", warm.status().ToString().c_str());
      return 1;
    }
    auto r = bench::MeasureDecode(**engine, batch, prompt_len, new_tokens, rng);
    if (!r.ok()) {
      std::fprintf(stderr, "batch %d: %s\n", batch, r.status().ToString().c_str());
      return 1;
    }
    const double ceiling_tps = ceiling_ms > 0 ? batch * 1e3 / ceiling_ms : 0;
    const double ratio = r->ms_per_step > 0 ? ceiling_ms / r->ms_per_step : 0;
    std::printf("batch %3d: decode %8.1f tokens/s, %.3f ms/step, TTFT %.1f ms | roofline %.3f ms/step "
                "(%.0f tokens/s) | roofline/measured = %.2f\n",
                batch, r->decode_tokens_per_s, r->ms_per_step, r->ttft_ms, ceiling_ms, ceiling_tps,
                ratio);
    report["batches"].push_back({{"batch", batch},
                                 {"decode_tokens_per_s", r->decode_tokens_per_s},
                                 {"ms_per_step", r->ms_per_step},
                                 {"ttft_ms", r->ttft_ms},
                                 {"roofline_tokens_per_s", ceiling_tps},
                                 {"roofline_over_measured", ratio}});
  }
  if (const std::string path = absl::GetFlag(FLAGS_json); !path.empty()) {
    std::ofstream(path) << report.dump(2) << "\n";
  }
  (*engine)->Stop();
  return 0;
}

}  // namespace
}  // namespace kvserve

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return kvserve::Run();
}
