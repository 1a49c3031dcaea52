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
//                     [--fast_kernels=all|none|LIST] [--cuda_graphs] [--tune_gemms]
//                     [--prefill=1x2048,8x2048]
//
// --fast_kernels=none next to the default measures what the fast kernels
// (docs/cuda.md) buy on the whole step; the report names any kernel the
// start-up check replaced by its reference.
#include <cuda_profiler_api.h>
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
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "engine/core/engine.h"
#include "engine/loading/default_model.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/device_info.h"
#include "kernels/cuda/fast_kernels.h"
#include "nlohmann/json.hpp"
#include "prometheus/registry.h"
#include "tests/bench/cuda_bench_util.h"
#include "tests/bench/decode_bench_util.h"
#include "tools/model_presets.h"

ABSL_FLAG(std::string, batches, "1,32",
          "Batch sizes to measure, comma separated; empty: no decode run (--prefill only).");
ABSL_FLAG(int, prompt, 128, "Prompt tokens per request.");
ABSL_FLAG(int, new_tokens, 128, "Generated tokens per request.");
ABSL_FLAG(std::string, json, "", "Write the results here as JSON.");
ABSL_FLAG(std::string, dtype, "bfloat16", "Compute dtype of the CUDA backend.");
ABSL_FLAG(std::string, fast_kernels, "all",
          "The server's --cuda_fast_kernels: all, none, or a list of kernel names.");
ABSL_FLAG(bool, cuda_graphs, true, "The server's --cuda_graphs (on by default there too).");
ABSL_FLAG(bool, tune_gemms, true, "The server's --cuda_tune_gemms.");
ABSL_FLAG(std::string, prefill, "",
          "Also time the prefill of BATCHxTOKENS prompts (e.g. 1x2048,8x2048): TTFT of one "
          "new token, the whole prompt in one step where --max_batched_tokens allows.");
ABSL_FLAG(int, max_batched_tokens, 16384, "The engine's --max_num_batched_tokens.");
ABSL_FLAG(bool, profile, false,
          "Bracket only the measured runs (not the load, the GEMM tuning or the warm-ups) with "
          "cudaProfilerStart/Stop, for `ncu --profile-from-start off` "
          "(deploy/gpu_profile_table.py reads its CSV).");

namespace kvserve {
namespace {

// The llama-3.2-1b preset (kvserve-mkmodel's), with a short context: the
// benchmark's sequences stay well inside it, and the shape is what matters.
ModelConfig Llama32_1B() {
  ModelConfig c = FindPreset("llama-3.2-1b")->config;
  c.max_context = 4096;
  return c;
}

int Run() {
  if (cuda::DeviceCount() == 0) {
    std::fprintf(stderr, "cuda_decode_bench: %s\n", cuda::DescribeDevice().c_str());
    return 2;
  }
  // --batches= (empty): prefill only (--prefill), e.g. for a profile of it alone.
  const std::string batch_list = absl::GetFlag(FLAGS_batches);
  auto batches = batch_list.empty() ? std::vector<int>{} : bench::ParseBatches(batch_list);
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
  const int max_batch =
      batches->empty() ? 1 : *std::max_element(batches->begin(), batches->end());

  const double copy_bw = bench::MeasureCopyBandwidth();
  const ModelConfig config = Llama32_1B();
  const double weight_bytes = double(bench::WeightParams(config)) * DTypeSize(*dtype);
  const double ceiling_ms = copy_bw > 0 ? weight_bytes / copy_bw * 1e3 : 0;

  auto fast = cuda::FastKernels::Parse(absl::GetFlag(FLAGS_fast_kernels));
  if (!fast.ok()) {
    std::fprintf(stderr, "--fast_kernels: %s\n", std::string(fast.status().message()).c_str());
    return 2;
  }
  std::vector<std::pair<int, int>> prefills;  // (batch, tokens)
  for (absl::string_view item :
       absl::StrSplit(absl::GetFlag(FLAGS_prefill), ',', absl::SkipWhitespace())) {
    std::pair<absl::string_view, absl::string_view> bt = absl::StrSplit(item, 'x');
    int b = 0, t = 0;
    if (!absl::SimpleAtoi(bt.first, &b) || !absl::SimpleAtoi(bt.second, &t) || b < 1 || t < 1) {
      std::fprintf(stderr, "--prefill: BATCHxTOKENS items (1x2048,8x2048), not \"%s\"\n",
                   std::string(item).c_str());
      return 2;
    }
    prefills.emplace_back(b, t);
  }
  cuda::CudaBackendOptions options;
  options.dtype = *dtype;
  options.fast_kernels = *fast;
  options.graphs = absl::GetFlag(FLAGS_cuda_graphs);
  options.tune_gemms = absl::GetFlag(FLAGS_tune_gemms);
  auto backend = cuda::CudaBackend::Create(options);
  if (!backend.ok()) {
    std::fprintf(stderr, "%s\n", backend.status().ToString().c_str());
    return 1;
  }
  const std::string device = (*backend)->device_name();
  EngineConfig ec;
  int max_prefill_batch = 1;
  for (auto [b, t] : prefills) max_prefill_batch = std::max(max_prefill_batch, b);
  ec.max_num_seqs = std::max(max_batch, max_prefill_batch);
  ec.max_num_batched_tokens = std::max(absl::GetFlag(FLAGS_max_batched_tokens), max_batch);
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
  report["fast_kernels"] = fast->ToString();
  report["cuda_graphs"] = options.graphs;
  report["tune_gemms"] = options.tune_gemms;
  const std::vector<std::string> fallbacks = (*engine)->info().kernel_fallbacks;
  report["kernel_fallbacks"] = fallbacks;
  std::printf("device %s; weights %.2f GB %s (loaded in %.1f s); fast kernels %s; graphs %s\n",
              device.c_str(), weight_bytes / 1e9, std::string(DTypeName(*dtype)).c_str(), load_s,
              fast->ToString().c_str(), options.graphs ? "on" : "off");
  if (!fallbacks.empty()) {
    std::printf("!! the start-up check replaced these fast kernels by their reference: %s\n",
                absl::StrJoin(fallbacks, ", ").c_str());
  }
  std::printf("device-to-device copy %.0f GB/s -> roofline %.3f ms/step\n", copy_bw / 1e9, ceiling_ms);
  for (int batch : *batches) {
    // Warm-up at this batch size: cuBLASLt plans for these shapes, first launches.
    if (auto warm = bench::MeasureDecode(**engine, batch, prompt_len, 8, rng); !warm.ok()) {
      std::fprintf(stderr, "warm-up: %s\n", warm.status().ToString().c_str());
      return 1;
    }
    if (absl::GetFlag(FLAGS_profile)) cudaProfilerStart();
    auto r = bench::MeasureDecode(**engine, batch, prompt_len, new_tokens, rng);
    if (absl::GetFlag(FLAGS_profile)) cudaProfilerStop();
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
  for (auto [batch, tokens] : prefills) {
    // TTFT of one new token each: the prefill (in max_batched_tokens chunks)
    // and one sampling step. The first run warms the prefill shapes up.
    bench::DecodeResult r;
    for (int run = 0; run < 2; ++run) {
      if (run == 1 && absl::GetFlag(FLAGS_profile)) cudaProfilerStart();
      auto m = bench::MeasureDecode(**engine, batch, tokens, 1, rng);
      if (run == 1 && absl::GetFlag(FLAGS_profile)) cudaProfilerStop();
      if (!m.ok()) {
        std::fprintf(stderr, "prefill %dx%d: %s\n", batch, tokens, m.status().ToString().c_str());
        return 1;
      }
      r = *m;
    }
    std::printf("prefill %d x %d tokens: TTFT %.2f ms (%.0f prompt tokens/s)\n", batch, tokens,
                r.ttft_ms, batch * tokens / (r.ttft_ms * 1e-3));
    report["prefills"].push_back({{"batch", batch}, {"tokens", tokens}, {"ttft_ms", r.ttft_ms}});
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
