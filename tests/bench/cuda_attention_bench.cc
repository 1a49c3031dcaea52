// The attention kernels alone, each fast kernel next to its reference
// (--cuda_fast_kernels=none) and next to the copy ceiling, measured in the
// same run on the same GPU (docs/performance.md, "Attention kernels"):
//
//   decode   one query per sequence over a paged cache of `context` keys:
//            µs per layer, and GB/s of K and V read (GQA: the KV heads only)
//            as a fraction of the device-to-device copy bandwidth;
//   prefill  causal, `seq` new tokens per sequence, nothing cached before:
//            ms per layer and TFLOP/s (4·B·H·S²·D/2 floating-point ops).
//
// The shapes are Llama-3.2-1B's heads (32 query, 8 KV, dim 64) and
// Llama-3-8B's (32 / 8, dim 128), at the batches and lengths of
// deploy/gpu_peers.py (PyTorch SDPA on the same GPU), so that the report
// sets kvserve's paged kernels next to FlashAttention-2 and cuDNN.
//
// Each op runs as the engine runs it: through CudaBackend (its plan, its
// reserved split workspace), K/V already in the cache (kv_written, as RoPE
// writes them), captured 20 times in one CUDA graph and replayed, so that
// the events time the GPU and not the host's launch rate. The fast and the
// reference outputs are compared (relative L2) as a sanity check; the unit
// tests (cuda_attention_test) are the correctness proof.
//
//   cuda_attention_bench [--dtype=bfloat16] [--json=report.json] [--reps=10]
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/device_info.h"
#include "kernels/dtype.h"
#include "kernels/op_params.h"
#include "nlohmann/json.hpp"
#include "tests/bench/cuda_bench_util.h"

ABSL_FLAG(std::string, dtype, "bfloat16", "bfloat16 or float16 (the fast kernels' dtypes).");
ABSL_FLAG(std::string, json, "", "Write the results here as JSON.");
ABSL_FLAG(int, reps, 10, "Graph replays timed per case (each holds 20 launches).");

namespace kvserve {
namespace {

constexpr int kLaunchesPerGraph = 20;
constexpr int kBlockSize = 16;

struct Heads {
  int heads, kv_heads, dim;
};
constexpr Heads kHeadShapes[] = {{32, 8, 64}, {32, 8, 128}};

struct Case {
  bool decode;  // else prefill
  int batch;
  int length;   // decode: keys per sequence; prefill: tokens per sequence
  Heads h;
  std::string Name() const {
    return absl::StrCat(decode ? "decode" : "prefill", " B", batch, decode ? " L" : " S", length,
                        " H", h.heads, "/", h.kv_heads, " d", h.dim);
  }
};

std::vector<Case> Cases() {
  std::vector<Case> cases;
  for (const Heads& h : kHeadShapes) {
    for (auto [b, l] : {std::pair{1, 256}, {1, 512}, {32, 256}, {32, 4096}, {128, 1024}}) {
      cases.push_back({true, b, l, h});
    }
    for (auto [b, s] : {std::pair{1, 2048}, {8, 2048}}) cases.push_back({false, b, s, h});
  }
  return cases;
}

// Device memory owned by the benchmark, viewed as a tensor.
struct DeviceArray {
  DeviceBufferPtr buffer;
  Tensor tensor;
};

absl::StatusOr<DeviceArray> Alloc(Backend& backend, DType dtype, std::vector<int64_t> shape) {
  DeviceArray a;
  a.tensor.dtype = dtype;
  a.tensor.rank = static_cast<int>(shape.size());
  for (int i = 0; i < a.tensor.rank; ++i) a.tensor.dims[i] = shape[i];
  auto buffer = backend.Allocate(a.tensor.bytes());
  if (!buffer.ok()) return buffer.status();
  a.buffer = *std::move(buffer);
  a.tensor.data = a.buffer->data();
  return a;
}

// Uniform(-1, 1) values in a 16-bit dtype, from a cheap generator: the
// caches of the large cases hold ~10⁸ elements.
absl::Status FillRandom(Backend& backend, const DeviceArray& a, uint64_t seed) {
  std::vector<uint16_t> bits(a.tensor.numel());
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (uint16_t& b : bits) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    const float x = static_cast<float>(s >> 40) / float(1 << 24) * 2.f - 1.f;
    b = a.tensor.dtype == DType::kBFloat16 ? FloatToBFloat16(x) : FloatToHalf(x);
  }
  return backend.CopyToDevice(bits.data(), bits.size() * 2, a.tensor.data);
}

absl::Status SetInts(Backend& backend, const DeviceArray& a, const std::vector<int32_t>& v) {
  return backend.CopyToDevice(v.data(), v.size() * sizeof(int32_t), a.tensor.data);
}

// Everything one case's op reads and writes, on one backend.
struct CaseBuffers {
  DeviceArray q, k, v, out, cache_k, cache_v, context_lens, block_tables, slot_mapping, cu_seqlens;
};

absl::StatusOr<CaseBuffers> MakeBuffers(Backend& backend, DType dtype, const Case& c) {
  CaseBuffers b;
  const int rows = c.decode ? c.batch : c.batch * c.length;  // query rows
  const int blocks_per_seq = (c.length + kBlockSize - 1) / kBlockSize;
  const int num_blocks = c.batch * blocks_per_seq;
  auto alloc = [&](DeviceArray& a, DType t, std::vector<int64_t> shape) -> absl::Status {
    auto r = Alloc(backend, t, std::move(shape));
    if (!r.ok()) return r.status();
    a = *std::move(r);
    return absl::OkStatus();
  };
  const Heads& h = c.h;
  for (auto* a : {&b.q, &b.out}) {
    if (auto s = alloc(*a, dtype, {rows, h.heads, h.dim}); !s.ok()) return s;
  }
  for (auto* a : {&b.k, &b.v}) {
    if (auto s = alloc(*a, dtype, {rows, h.kv_heads, h.dim}); !s.ok()) return s;
  }
  for (auto* a : {&b.cache_k, &b.cache_v}) {
    if (auto s = alloc(*a, dtype, {num_blocks, kBlockSize, h.kv_heads, h.dim}); !s.ok()) return s;
  }
  if (auto s = alloc(b.context_lens, DType::kInt32, {c.batch}); !s.ok()) return s;
  if (auto s = alloc(b.block_tables, DType::kInt32, {c.batch, blocks_per_seq}); !s.ok()) return s;
  if (auto s = alloc(b.slot_mapping, DType::kInt32, {rows}); !s.ok()) return s;
  if (auto s = alloc(b.cu_seqlens, DType::kInt32, {c.batch + 1}); !s.ok()) return s;

  uint64_t seed = 1;
  for (auto* a : {&b.q, &b.k, &b.v, &b.cache_k, &b.cache_v}) {
    if (auto s = FillRandom(backend, *a, seed++); !s.ok()) return s;
  }
  // Blocks dealt out in a shuffled order, as a long-running server's are.
  std::vector<int32_t> order(num_blocks);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937(7));
  std::vector<int32_t> slots, cu(c.batch + 1, 0);
  for (int s = 0; s < c.batch; ++s) {
    const int32_t* table = &order[s * blocks_per_seq];
    const int first_new = c.decode ? c.length - 1 : 0;
    for (int pos = first_new; pos < c.length; ++pos) {
      slots.push_back(table[pos / kBlockSize] * kBlockSize + pos % kBlockSize);
    }
    cu[s + 1] = cu[s] + (c.decode ? 1 : c.length);
  }
  for (auto [a, v] : {std::pair{&b.context_lens, std::vector<int32_t>(c.batch, c.length)},
                      {&b.block_tables, order}, {&b.slot_mapping, slots}, {&b.cu_seqlens, cu}}) {
    if (auto s = SetInts(backend, *a, v); !s.ok()) return s;
  }
  return b;
}

absl::Status RunOp(Backend& backend, const Case& c, const CaseBuffers& b) {
  const AttentionShape shape{c.h.heads, c.h.kv_heads, c.h.dim, 1.f / std::sqrt(float(c.h.dim))};
  const PagedKvCache cache{b.cache_k.tensor, b.cache_v.tensor, kBlockSize};
  if (c.decode) {
    DecodeAttentionParams p;
    p.q = b.q.tensor, p.k = b.k.tensor, p.v = b.v.tensor, p.out = b.out.tensor;
    p.context_lens = b.context_lens.tensor, p.block_tables = b.block_tables.tensor;
    p.slot_mapping = b.slot_mapping.tensor, p.cache = cache, p.shape = shape;
    p.num_seqs = c.batch, p.max_context_len = c.length, p.kv_written = true;
    return backend.DecodeAttention(p);
  }
  PrefillAttentionParams p;
  p.q = b.q.tensor, p.k = b.k.tensor, p.v = b.v.tensor, p.out = b.out.tensor;
  p.cu_seqlens_q = b.cu_seqlens.tensor, p.context_lens = b.context_lens.tensor;
  p.block_tables = b.block_tables.tensor, p.slot_mapping = b.slot_mapping.tensor;
  p.cache = cache, p.shape = shape, p.num_seqs = c.batch, p.max_q_len = c.length;
  p.max_context_len = c.length, p.kv_written = true;
  return backend.PrefillAttention(p);
}

// Microseconds per launch: kLaunchesPerGraph launches captured in one graph,
// replayed `reps` times between two events on the backend's stream.
absl::StatusOr<double> TimeOp(cuda::CudaBackend& backend, const Case& c, const CaseBuffers& b,
                              int bucket, int reps) {
  if (auto s = RunOp(backend, c, b); !s.ok()) return s;  // outside the graph: first launch
  if (auto s = backend.BeginCapture(bucket); !s.ok()) return s;
  for (int i = 0; i < kLaunchesPerGraph; ++i) {
    if (auto s = RunOp(backend, c, b); !s.ok()) {
      (void)backend.EndCapture(bucket);
      return s;
    }
  }
  if (auto s = backend.EndCapture(bucket); !s.ok()) return s;
  if (auto s = backend.Replay(bucket); !s.ok()) return s;  // warm
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  cudaEventRecord(start, backend.stream());
  absl::Status status;
  for (int i = 0; i < reps && status.ok(); ++i) status = backend.Replay(bucket);
  cudaEventRecord(stop, backend.stream());
  cudaEventSynchronize(stop);
  float ms = 0;
  cudaEventElapsedTime(&ms, start, stop);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  if (!status.ok()) return status;
  if (auto s = backend.Synchronize(); !s.ok()) return s;  // a device error reported by the op
  return ms * 1e3 / (reps * kLaunchesPerGraph);
}

absl::StatusOr<std::vector<float>> Download(Backend& backend, const DeviceArray& a) {
  std::vector<uint16_t> bits(a.tensor.numel());
  if (auto s = backend.CopyToHost(a.tensor.data, bits.size() * 2, bits.data()); !s.ok()) return s;
  std::vector<float> out(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) {
    out[i] = a.tensor.dtype == DType::kBFloat16 ? BFloat16ToFloat(bits[i]) : HalfToFloat(bits[i]);
  }
  return out;
}

double RelativeL2(const std::vector<float>& got, const std::vector<float>& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    num += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
    den += double(want[i]) * want[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

StepLimits LimitsFor(const std::vector<Case>& cases, const Heads& h) {
  StepLimits limits;
  limits.attention = {h.heads, h.kv_heads, h.dim, 1.f / std::sqrt(float(h.dim))};
  limits.hidden_size = h.heads * h.dim;
  for (const Case& c : cases) {
    if (c.h.dim != h.dim) continue;
    limits.max_seqs = std::max(limits.max_seqs, c.batch);
    limits.max_tokens = std::max(limits.max_tokens, c.decode ? c.batch : c.batch * c.length);
    limits.max_context = std::max(limits.max_context, c.length);
  }
  return limits;
}

int Run() {
  if (cuda::DeviceCount() == 0) {
    std::fprintf(stderr, "cuda_attention_bench: %s\n", cuda::DescribeDevice().c_str());
    return 2;
  }
  auto dtype = ParseDType(absl::GetFlag(FLAGS_dtype));
  if (!dtype.ok() || (*dtype != DType::kBFloat16 && *dtype != DType::kFloat16)) {
    std::fprintf(stderr, "--dtype: bfloat16 or float16, not %s\n",
                 absl::GetFlag(FLAGS_dtype).c_str());
    return 2;
  }
  const int reps = std::max(1, absl::GetFlag(FLAGS_reps));
  const double copy_bw = bench::MeasureCopyBandwidth();
  const std::vector<Case> cases = Cases();

  nlohmann::json report;
  report["dtype"] = std::string(DTypeName(*dtype));
  report["copy_bandwidth_gb_s"] = copy_bw / 1e9;
  report["block_size"] = kBlockSize;
  std::printf("copy %.0f GB/s (read + write); %s, paged K/V in blocks of %d\n", copy_bw / 1e9,
              std::string(DTypeName(*dtype)).c_str(), kBlockSize);
  int failures = 0, bucket = 0;
  for (const Heads& h : kHeadShapes) {
    // One backend per variant and head shape, reserved for its largest case.
    std::unique_ptr<cuda::CudaBackend> backends[2];  // fast, reference
    for (int v = 0; v < 2; ++v) {
      cuda::CudaBackendOptions options;
      options.dtype = *dtype;
      options.graphs = true;
      options.tune_gemms = false;
      options.fast_kernels = v == 0 ? cuda::FastKernels::All() : cuda::FastKernels::None();
      // Programmatic launch is one switch per process (pdl.h): the reference
      // backend made second must not turn it off for the fast one.
      options.fast_kernels.pdl = true;
      auto backend = cuda::CudaBackend::Create(options);
      if (!backend.ok()) {
        std::fprintf(stderr, "%s\n", backend.status().ToString().c_str());
        return 1;
      }
      if (auto s = (*backend)->Reserve(LimitsFor(cases, h)); !s.ok()) {
        std::fprintf(stderr, "Reserve: %s\n", s.ToString().c_str());
        return 1;
      }
      backends[v] = *std::move(backend);
    }
    const std::vector<std::string> fallbacks = backends[0]->KernelFallbacks();
    if (!fallbacks.empty()) {
      std::printf("!! d%d: the start-up check replaced fast kernels by their reference: %s\n",
                  h.dim, absl::StrJoin(fallbacks, ", ").c_str());
      report["fallbacks"][absl::StrCat("d", h.dim)] = fallbacks;
      ++failures;
    }
    for (const Case& c : cases) {
      if (c.h.dim != h.dim) continue;
      double us[2] = {0, 0};
      std::vector<float> outputs[2];
      absl::Status status;
      for (int v = 0; v < 2 && status.ok(); ++v) {
        auto buffers = MakeBuffers(*backends[v], *dtype, c);
        if (!buffers.ok()) {
          status = buffers.status();
          break;
        }
        auto t = TimeOp(*backends[v], c, *buffers, bucket++, reps);
        if (!t.ok()) {
          status = t.status();
          break;
        }
        us[v] = *t;
        auto out = Download(*backends[v], buffers->out);
        if (!out.ok()) {
          status = out.status();
          break;
        }
        outputs[v] = *std::move(out);
      }
      nlohmann::json row = {{"case", c.Name()}, {"kind", c.decode ? "decode" : "prefill"},
                            {"batch", c.batch}, {"length", c.length}, {"heads", c.h.heads},
                            {"kv_heads", c.h.kv_heads}, {"head_dim", c.h.dim}};
      if (!status.ok()) {
        std::printf("%-34s !! %s\n", c.Name().c_str(), status.ToString().c_str());
        row["error"] = status.ToString();
        report["cases"].push_back(row);
        ++failures;
        continue;
      }
      const double diff = RelativeL2(outputs[0], outputs[1]);
      row.update({{"fast_us", us[0]}, {"reference_us", us[1]},
                  {"speedup", us[0] > 0 ? us[1] / us[0] : 0}, {"fast_vs_reference_rel_l2", diff}});
      if (c.decode) {
        const double bytes = 2.0 * c.batch * c.length * c.h.kv_heads * c.h.dim * 2;
        const double gb_s = bytes / (us[0] * 1e-6) / 1e9;
        row.update({{"kv_bytes", bytes}, {"fast_gb_s", gb_s},
                    {"fraction_of_copy", copy_bw > 0 ? gb_s * 1e9 / copy_bw : 0}});
        std::printf("%-34s fast %9.1f us (%5.0f GB/s, %.2f of copy) | reference %9.1f us | %5.2fx"
                    " | rel L2 %.1e\n",
                    c.Name().c_str(), us[0], gb_s, copy_bw > 0 ? gb_s * 1e9 / copy_bw : 0, us[1],
                    us[1] / us[0], diff);
      } else {
        const double flops = 4.0 * c.batch * c.h.heads * double(c.length) * c.length * c.h.dim / 2;
        const double tflops = flops / (us[0] * 1e-6) / 1e12;
        row.update({{"flops", flops}, {"fast_tflops", tflops}});
        std::printf("%-34s fast %9.3f ms (%5.0f TFLOP/s) | reference %9.3f ms | %5.2fx"
                    " | rel L2 %.1e\n",
                    c.Name().c_str(), us[0] / 1e3, tflops, us[1] / 1e3, us[1] / us[0], diff);
      }
      // bf16 outputs of two orders of summation differ by ~1e-3; 2e-2 is a
      // broken kernel, not rounding (the unit tests bound it properly).
      if (!(diff < 2e-2)) ++failures;
      report["cases"].push_back(row);
    }
  }
  if (const std::string path = absl::GetFlag(FLAGS_json); !path.empty()) {
    std::ofstream(path) << report.dump(2) << "\n";
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace kvserve

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return kvserve::Run();
}
