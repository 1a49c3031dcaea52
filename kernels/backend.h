// The op interface the model is written against. One implementation per
// device: CpuBackend (kernels/cpu, always built, the reference) and
// CudaBackend (kernels/cuda, when KVSERVE_CUDA is on). The engine calls a
// backend from its one engine thread only.
//
// Ops validate shapes and dtypes and return InvalidArgument naming the
// mismatch; on an asynchronous device they enqueue work and return.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kernels/device_buffer.h"
#include "kernels/op_params.h"
#include "kernels/tensor.h"

namespace kvserve {

/// A device's memory, for sizing the KV cache from a utilization fraction.
struct DeviceMemoryInfo {
  size_t free_bytes = 0;
  size_t total_bytes = 0;
};

/// One GEMM of every step, `x [rows ≤ max_rows, K] · weightᵀ (+ bias)`, so
/// that a backend can plan it before the first step.
struct LinearLimits {
  Tensor weight;  // [N, K], the model's own (its address decides alignment)
  Tensor bias;    // [N] or empty
  DType out_dtype = DType::kFloat32;
  int64_t max_rows = 0;
};

/// The largest step a model will run (see Backend::Reserve).
struct StepLimits {
  int max_tokens = 0;   // tokens per step
  int max_seqs = 0;     // sequences per step (the largest decode batch)
  int max_context = 0;  // positions per sequence
  int hidden_size = 0;  // width of the rows RmsNorm / AddRmsNorm normalize
  AttentionShape attention;
  std::vector<LinearLimits> linears;
};

class Backend {
 public:
  virtual ~Backend() = default;

  /// "cpu" or "cuda".
  virtual std::string name() const = 0;
  /// The dtype the model computes in on this backend (activations, KV, and
  /// the weights unless MatrixWeightDType says otherwise).
  virtual DType compute_dtype() const = 0;
  /// The dtype this backend keeps a weight matrix in (a Linear's weight, the
  /// embedding table) when the checkpoint stores it as `stored`: the compute
  /// dtype by default; the CPU backend may keep bfloat16 and Q8_0 weights
  /// (docs/cpu_weight_dtypes.md). Upload converts to it.
  virtual DType MatrixWeightDType(DType stored) const {
    (void)stored;
    return compute_dtype();
  }

  /// Whether Upload takes GGUF block formats (kQ8_0 ... kQ6_K) as its source,
  /// dequantizing them on the way (the CUDA backend, to its compute dtype), so
  /// that a loader need not expand them to float32 on the host first.
  virtual bool UploadsFromBlockDTypes() const { return false; }

  /// Whether weights may stay in host memory the backend does not own (a
  /// mapped GGUF file's bytes, TensorData::owner) instead of being uploaded:
  /// the CPU backend computes from them in place.
  virtual bool BorrowsHostWeights() const { return false; }

  // Memory. Copies are ordered with the ops; CopyToHost waits for them.
  virtual absl::StatusOr<DeviceBufferPtr> Allocate(size_t bytes) = 0;
  virtual absl::Status CopyToDevice(const void* host, size_t bytes, void* device) = 0;
  virtual absl::Status CopyToHost(const void* device, size_t bytes, void* host) = 0;
  /// Copies `dst.numel()` host elements of type `src_dtype` into `dst`,
  /// converting between float types (weights arrive as f32, f16, bf16, or
  /// Q8_0 where MatrixWeightDType keeps it).
  virtual absl::Status Upload(const void* host, DType src_dtype, Tensor dst) = 0;
  virtual absl::Status Synchronize() = 0;
  /// Free and total memory of the device right now. Unimplemented on the
  /// CPU, whose KV pool is sized by EngineConfig::kv_cache_bytes instead.
  virtual absl::StatusOr<DeviceMemoryInfo> MemoryInfo() {
    return absl::UnimplementedError(name() + " backend reports no device memory");
  }
  /// Called once by the model, after its weights are loaded and before its
  /// first step, with the largest step it will run: the backend allocates
  /// the scratch its ops need and plans its GEMMs here, so that a step
  /// neither allocates nor waits for the whole device. Ops still accept any
  /// step (tests call them directly), possibly slower. The CPU backend needs
  /// nothing (its scratch is per call, in host memory).
  virtual absl::Status Reserve(const StepLimits& limits) {
    (void)limits;
    return absl::OkStatus();
  }

  /// The fast kernels a backend found wrong on this device at start-up and
  /// replaced by their reference (names, e.g. "flash_decode"). The server
  /// logs and exports them; empty on the CPU.
  virtual std::vector<std::string> KernelFallbacks() const { return {}; }

  // Graphs. A decode step padded to its bucket issues the same ops on the
  // same buffers every time (engine/core/decode_buckets.h), so a backend may
  // record them once per bucket and replay the recording, which costs one
  // launch instead of one per op. The CPU backend does not record: these are
  // no-ops there and the runner calls the ops directly.
  /// Whether the runner should record and replay (CUDA with --cuda_graphs).
  virtual bool SupportsGraphs() const { return false; }
  /// Ops issued from here until EndCapture are recorded as `bucket`'s graph,
  /// not run; their host-side checks still run.
  virtual absl::Status BeginCapture(int bucket) {
    (void)bucket;
    return absl::OkStatus();
  }
  virtual absl::Status EndCapture(int bucket) {
    (void)bucket;
    return absl::OkStatus();
  }
  /// Runs `bucket`'s recorded ops again, on what their buffers hold now.
  virtual absl::Status Replay(int bucket) {
    (void)bucket;
    return absl::OkStatus();
  }

  // Ops.
  /// out[t] = table[ids[t]]. ids: [T] int32, table: [V, hidden], out: [T, hidden].
  virtual absl::Status Embedding(Tensor ids, Tensor table, Tensor out) = 0;
  /// out = x / rms(x) * weight per row. x, out: [T, hidden], weight: [hidden].
  virtual absl::Status RmsNorm(Tensor x, Tensor weight, float eps, Tensor out) = 0;
  /// residual += x; out = RmsNorm(residual). The fused pre-norm of each block.
  virtual absl::Status AddRmsNorm(Tensor residual, Tensor x, Tensor weight, float eps,
                                  Tensor out) = 0;
  /// out = x · weightᵀ (+ bias). x: [T, K], weight: [N, K], bias: [N] or empty,
  /// out: [T, N] of the compute dtype or float32 (the logits).
  virtual absl::Status Linear(Tensor x, Tensor weight, Tensor bias, Tensor out) = 0;
  /// Linear over a matrix kept as row blocks apart (their storage dtypes
  /// differ, as a Q4_K_M file's Q4_K q/k rows and Q6_K v rows, or they are
  /// borrowed from a mapped file): out[:, n_0 + ... + n_{j-1} + c] = x ·
  /// parts[j][c]ᵀ (+ bias). One part is Linear; only backends that keep such
  /// matrices (MatrixWeightDType) take more.
  virtual absl::Status LinearParts(Tensor x, const std::vector<Tensor>& parts, Tensor bias,
                                   Tensor out) {
    if (parts.size() == 1) return Linear(x, parts.front(), bias, out);
    return absl::UnimplementedError(name() + " backend multiplies by one weight tensor, got " +
                                    std::to_string(parts.size()) + " parts");
  }
  /// A block's pre-norm and the projection it feeds: residual += delta
  /// (delta empty: no add), normed = RmsNorm(residual) · norm_weight, out =
  /// LinearParts(normed, parts, bias). A backend may fuse them and leave
  /// `normed` (scratch [T, hidden]) unwritten; the results are the same.
  virtual absl::Status AddRmsNormLinear(Tensor residual, Tensor delta, Tensor norm_weight,
                                        float eps, Tensor normed, const std::vector<Tensor>& parts,
                                        Tensor bias, Tensor out) {
    absl::Status s = delta.empty() ? RmsNorm(residual, norm_weight, eps, normed)
                                   : AddRmsNorm(residual, delta, norm_weight, eps, normed);
    if (!s.ok()) return s;
    return LinearParts(normed, parts, bias, out);
  }
  virtual absl::Status RopeSplitQkv(const RopeSplitParams& params) = 0;
  /// out = silu(gate) * up, where gate_up: [T, 2I] holds gate | up per row, out: [T, I].
  virtual absl::Status SiluMul(Tensor gate_up, Tensor out) = 0;
  /// The MLP's down projection: act = SiluMul(gate_up), out = Linear(act,
  /// weight, bias). A backend may fuse the two and leave `act` (scratch of
  /// [T, I]) unwritten; the result is the same.
  virtual absl::Status SiluMulLinear(Tensor gate_up, Tensor act, Tensor weight, Tensor bias,
                                     Tensor out) {
    absl::Status s = SiluMul(gate_up, act);
    if (!s.ok()) return s;
    return Linear(act, weight, bias, out);
  }
  /// out[i] = x[rows[i]]. rows: [S] int32.
  virtual absl::Status GatherRows(Tensor x, Tensor rows, Tensor out) = 0;
  virtual absl::Status PrefillAttention(const PrefillAttentionParams& params) = 0;
  virtual absl::Status DecodeAttention(const DecodeAttentionParams& params) = 0;
  virtual absl::Status Sample(const SampleParams& params) = 0;
  virtual absl::Status MaskLogits(const MaskLogitsParams& params) = 0;
};

}  // namespace kvserve
