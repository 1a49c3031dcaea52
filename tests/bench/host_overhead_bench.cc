// Host overhead of one engine step (issue 10, item 6): the scheduler, the
// model runner and output processing driven with N running sequences over a
// NullBackend (ops check shapes and compute nothing), timed per phase with a
// steady clock, next to the step time of the CPU backend on the same model
// and batch, so that the host's share of a real step is visible.
//
//   kvserve-host-overhead-bench [--seqs=64,256] [--prompt=16] [--steps=200] [--cpu_steps=5]
//
// Phases: schedule (Scheduler::Schedule), prepare (metadata and sampling
// rows built and copied up), execute (the model's ops issued), sample
// (sampling parameters up, Sample, tokens down), outputs (each sampled token
// appended to its sequence). The engine's per-request output work
// (detokenizing, sinks, metrics) is not in this loop.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "engine/core/model_runner.h"
#include "engine/core/scheduler.h"
#include "engine/kv/block_manager.h"
#include "engine/kv/kv_cache.h"
#include "engine/loading/model_loader.h"
#include "engine/model/model_registry.h"
#include "kernels/cpu/cpu_backend.h"
#include "tests/bench/decode_bench_util.h"
#include "tests/bench/null_backend.h"

ABSL_FLAG(std::string, seqs, "64,256", "Running sequences to measure, comma separated.");
ABSL_FLAG(int, prompt, 16, "Prompt tokens per sequence.");
ABSL_FLAG(int, steps, 200, "Timed decode steps on the null backend.");
ABSL_FLAG(int, cpu_steps, 5, "Timed decode steps on the CPU backend (0: skip it).");

namespace kvserve::bench {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kBlockSize = 16;

double Micros(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

struct PhaseMicros {
  double schedule = 0, prepare = 0, execute = 0, sample = 0, outputs = 0, total = 0;
};

// One scheduler + runner over `backend`, `seqs` sequences of `prompt` tokens:
// prefills them, then times `steps` pure decode steps. Mean µs per step.
absl::StatusOr<PhaseMicros> Measure(Backend& backend, int seqs, int prompt, int steps) {
  ASSIGN_OR_RETURN(ModelSource source, OpenModelSource(""));
  const ModelConfig& mc = source.config;
  const int max_tokens = std::max(2048, seqs);
  ASSIGN_OR_RETURN(std::unique_ptr<Model> model,
                   CreateModel(mc, *source.weights, backend, max_tokens, seqs));
  // Every sequence holds its whole run, so nothing is preempted mid-measure.
  const int blocks_per_seq = (prompt + steps + 2 + kBlockSize - 1) / kBlockSize + 1;
  const int num_blocks = seqs * blocks_per_seq;
  ASSIGN_OR_RETURN(std::unique_ptr<KvCache> cache,
                   KvCache::Create(backend, mc.kv_cache_shape(), num_blocks, kBlockSize));
  BlockManager blocks(num_blocks, kBlockSize);
  SchedulerConfig sc;
  sc.max_num_seqs = seqs;
  sc.max_num_batched_tokens = max_tokens;
  Scheduler scheduler(sc, blocks);
  ASSIGN_OR_RETURN(std::unique_ptr<ModelRunner> runner,
                   ModelRunner::Create(backend, *model, *cache, max_tokens, seqs));

  for (SeqId id = 1; id <= SeqId(seqs); ++id) {
    std::vector<int32_t> tokens(prompt);
    for (int i = 0; i < prompt; ++i) tokens[i] = static_cast<int32_t>((id * 31 + i * 7) % mc.vocab_size);
    scheduler.Add(std::make_unique<Sequence>(id, std::move(tokens)));
  }
  PhaseMicros sum;
  int timed = 0;
  for (int guard = 0; timed < steps; ++guard) {
    if (guard > steps + 1000) return absl::InternalError("the sequences never reached pure decode");
    const Clock::time_point t0 = Clock::now();
    ScheduleOutput schedule = scheduler.Schedule();
    const Clock::time_point t1 = Clock::now();
    ASSIGN_OR_RETURN(StepResult result, runner->Run(schedule));
    const Clock::time_point t2 = Clock::now();
    for (size_t i = 0; i < result.seq_ids.size(); ++i) {
      scheduler.AppendToken(result.seq_ids[i], result.tokens[i]);
    }
    const Clock::time_point t3 = Clock::now();
    // Time only steady-state decode: every running sequence, one token each.
    const bool decode = static_cast<int>(schedule.chunks.size()) == seqs &&
                        schedule.num_batched_tokens == seqs;
    if (!decode) continue;
    ++timed;
    sum.schedule += Micros(t1 - t0);
    sum.prepare += Micros(result.times.prepare);
    sum.execute += Micros(result.times.execute);
    sum.sample += Micros(result.times.sample);
    sum.outputs += Micros(t3 - t2);
    sum.total += Micros(t3 - t0);
  }
  for (SeqId id = 1; id <= SeqId(seqs); ++id) scheduler.Remove(id);
  if (blocks.num_used_blocks() != 0) {
    return absl::InternalError(absl::StrCat(blocks.num_used_blocks(), " KV blocks leaked"));
  }
  for (double* v : {&sum.schedule, &sum.prepare, &sum.execute, &sum.sample, &sum.outputs, &sum.total}) {
    *v /= timed;
  }
  return sum;
}

int Run() {
  auto seq_counts = ParseBatches(absl::GetFlag(FLAGS_seqs));
  const int prompt = absl::GetFlag(FLAGS_prompt), steps = absl::GetFlag(FLAGS_steps),
            cpu_steps = absl::GetFlag(FLAGS_cpu_steps);
  if (!seq_counts.ok()) {
    std::fprintf(stderr, "--seqs: %s\n", std::string(seq_counts.status().message()).c_str());
    return 2;
  }
  if (prompt < 1 || steps < 1 || cpu_steps < 0) {
    std::fprintf(stderr, "--prompt and --steps must be ≥ 1, --cpu_steps ≥ 0\n");
    return 2;
  }
  std::printf("host overhead per decode step, µs (null backend: mean of %d steps; cpu backend: "
              "mean of %d; default model, prompt %d)\n", steps, cpu_steps, prompt);
  std::printf("%6s %9s %9s %9s %9s %9s %9s | %12s %8s  goal\n", "seqs", "schedule", "prepare",
              "execute", "sample", "outputs", "total", "cpu step µs", "host %");
  for (int seqs : *seq_counts) {
    NullBackend null(/*token=*/7);
    absl::StatusOr<PhaseMicros> host = Measure(null, seqs, prompt, steps);
    if (!host.ok()) {
      std::fprintf(stderr, "null backend, %d seqs: %s\n", seqs, host.status().ToString().c_str());
      return 1;
    }
    double cpu_total = 0;
    if (cpu_steps > 0) {
      CpuBackend cpu;
      absl::StatusOr<PhaseMicros> real = Measure(cpu, seqs, prompt, cpu_steps);
      if (!real.ok()) {
        std::fprintf(stderr, "cpu backend, %d seqs: %s\n", seqs, real.status().ToString().c_str());
        return 1;
      }
      cpu_total = real->total;
    }
    std::printf("%6d %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f | %12.0f %7.2f%%  %s\n", seqs,
                host->schedule, host->prepare, host->execute, host->sample, host->outputs,
                host->total, cpu_total, cpu_total > 0 ? 100.0 * host->total / cpu_total : 0.0,
                seqs >= 256 ? (host->total <= 100.0 ? "≤100 µs: met" : ">100 µs: NOT met") : "-");
  }
  return 0;
}

}  // namespace
}  // namespace kvserve::bench

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return kvserve::bench::Run();
}
