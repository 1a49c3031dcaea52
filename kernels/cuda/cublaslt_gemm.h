// out = x · Wᵀ (+ bias) through cuBLASLt: bf16/fp16 operands on the tensor
// cores, or float32 operands on the CUDA cores (CUBLAS_COMPUTE_32F, no TF32,
// so float32 matches the CPU within 1e-4); float32 accumulation always; the
// output in the operand dtype or float32 (the logits).
//
// Row-major x [M, K] and W [N, K] are column-major xᵀ [K, M] and Wᵀ [K, N],
// so the product is computed as column-major outᵀ [N, M] = op(Wᵀ)ᵀ · xᵀ with
// TRANSA = T: cuBLASLt's "TN" layout, its best supported one.
//
// When the heuristic has no algorithm for a shape (cuBLASLt's fast kernels
// want 16-byte aligned rows; a row of 172 bf16 values is not), the GEMM runs
// through cublasGemmEx instead, which takes any leading dimension.
//
// Plans (descriptors, layouts and the heuristic's few best algorithms) are
// made per bucket of row counts M, not per M: a server sees every M from 1 to
// max_num_batched_tokens, and one plan per M would grow without bound. M is
// rounded up to a power of two up to 256, then to a multiple of 256; the
// heuristic runs once per bucket at its largest M. Its algorithms are chosen
// for that exact shape, so before an algorithm runs at another M of the
// bucket cublasLtMatmulAlgoCheck confirms it supports that M (first
// candidate that does; none: cublasGemmEx), once per M, remembered. Warmup
// makes the plans of the model's GEMMs and checks every decode M (1 ..
// max_num_seqs) before the first step; the cache holds at most kMaxPlans.
//
// The heuristic ranks its candidates by a model of the GPU, and on the
// first H100 run its first choice read the QKV and O weights at 50% and 38%
// of the memory bandwidth at decode sizes. So Warmup, when tuning is on,
// times each plan's candidates on this GPU at the bucket's largest M (a few
// repetitions each, cycling through every layer's weight of that shape so
// that the reads come from memory as in a step, not from L2) and keeps them
// fastest first; the per-M check then takes the fastest that supports M.
// At decode sizes (M ≤ 8) the small-M kernel of gemv_small_m.h competes too,
// once it has computed what the fastest candidate computes.
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/backend.h"
#include "kernels/cuda/cuda_resources.h"
#include "kernels/tensor.h"

namespace kvserve::cuda {

class CublasLtGemm {
 public:
  /// `workspace_bytes` of device memory for split-K and friends (32 MiB is
  /// what NVIDIA recommends for Hopper).
  /// `tune`: time the candidates at Warmup; `allow_gemv`: let the small-M
  /// kernel compete there (M ≤ 8); `allow_skinny`: the skinny tensor-core
  /// kernel (9 ≤ M ≤ 64, gemm_skinny_mma.h).
  static absl::StatusOr<std::unique_ptr<CublasLtGemm>> Create(cudaStream_t stream,
                                                              size_t workspace_bytes,
                                                              bool tune = true,
                                                              bool allow_gemv = true,
                                                              bool allow_skinny = true);
  ~CublasLtGemm();
  CublasLtGemm(const CublasLtGemm&) = delete;
  CublasLtGemm& operator=(const CublasLtGemm&) = delete;

  /// x: [M, K], weight: [N, K] of x's dtype, bias: [N] of x's dtype or empty,
  /// out: [M, N] of x's dtype or float32. Shapes are validated by the caller
  /// (CheckLinear). Enqueued on the stream.
  absl::Status Linear(Tensor x, Tensor weight, Tensor bias, Tensor out);

  /// out = Linear(SiluMul(gate_up), weight, bias), `act` the SiluMul output
  /// [M, K]. Where the plan for the activation's product picks the small-M
  /// kernel and `fuse` allows it, its SiLU variant computes the activation as
  /// it loads it (act unwritten); otherwise SiluMul, then Linear.
  absl::Status SiluMulLinear(Tensor gate_up, Tensor act, Tensor weight, Tensor bias, Tensor out,
                             bool fuse);

  /// The pre-norm fused into the small-M GEMV (LaunchGemvRmsNorm) where the
  /// plan for Linear(normed, weight, bias, out) picks that kernel and it
  /// serves: true when enqueued; false leaves the caller to norm, then Linear.
  absl::StatusOr<bool> RmsNormLinear(Tensor residual, Tensor delta, Tensor norm_weight, float eps,
                                     int* counter, Tensor normed, Tensor weight, Tensor bias,
                                     Tensor out);

  /// Plans every bucket of each GEMM up to its max_rows and checks an
  /// algorithm for every M in 1 .. `decode_rows`, so that decode steps plan
  /// nothing. Activations are assumed 256-byte aligned (cudaMalloc'ed, as
  /// the model's are); another alignment is planned when first seen.
  absl::Status Warmup(const std::vector<LinearLimits>& linears, int decode_rows);

  /// The bucket holding `rows`, as its largest row count: powers of two up
  /// to 256, then multiples of 256.
  static int64_t BucketEnd(int64_t rows);
  /// The bucket's smallest row count.
  static int64_t BucketBegin(int64_t rows);

  static constexpr size_t kMaxPlans = 1024;
  static constexpr int kCandidates = 8;  // algorithms kept per plan
  size_t num_plans() const { return plans_.size(); }
  /// What tuning found (Warmup): plans timed, and those whose fastest
  /// candidate was not the heuristic's first, with the time that saves.
  struct TuningSummary {
    int plans_timed = 0;
    int plans_reordered = 0;
    int plans_gemv = 0;       // decode buckets where the small-M kernel was fastest
    int plans_skinny = 0;     // buckets of 9-64 rows where the skinny MMA kernel was
    double heuristic_us = 0;  // the heuristic's first choices, one call of each plan
    double tuned_us = 0;      // the fastest candidates
  };
  const TuningSummary& tuning() const { return tuning_; }
  /// Kernels found wrong on this GPU while tuning ("gemv_small_m"): never used.
  const std::vector<std::string>& fallbacks() const { return fallbacks_; }

 private:
  struct Plan;
  // Bucket end, N, K, in dtype, out dtype, fused bias, alignments of x, W,
  // out, bias (0: none).
  using Key = std::tuple<int64_t, int64_t, int64_t, int, int, bool, int, int, int, int>;

  explicit CublasLtGemm(cudaStream_t stream);  // defined where Plan is complete
  /// `bias`: the fused bias's pointer, which the heuristic needs (its alignment).
  absl::StatusOr<Plan*> GetPlan(const Key& key, const void* bias);
  absl::StatusOr<std::unique_ptr<Plan>> MakePlan(const Key& key, const void* bias);
  /// The plan's algorithm for exactly `rows` (its layouts set to `rows`), or
  /// null when none of its candidates supports that M.
  absl::StatusOr<const cublasLtMatmulAlgo_t*> Select(Plan& plan, int64_t rows);
  absl::Status SetRows(Plan& plan, int64_t rows);
  /// The plan and algorithm for one call: the fused-bias plan, else the plain
  /// one (AddBias after it), else {null, null}: cublasGemmEx.
  struct Choice {
    Plan* plan = nullptr;
    const cublasLtMatmulAlgo_t* algo = nullptr;
  };
  absl::StatusOr<Choice> Choose(int64_t rows, int64_t n, int64_t k, DType in, DType out,
                                bool fuse, int align_x, int align_w, int align_out,
                                const void* bias);
  absl::Status GemmEx(Tensor x, Tensor weight, Tensor out);
  /// Times the plan's candidates at its bucket's largest M over `weights`
  /// (and their biases), on scratch activations `x` / `out` large enough,
  /// and sorts them fastest first.
  // µs per call of `call(i)` for i < calls, queued behind a spin on the stream.
  absl::StatusOr<float> TimeCalls(int calls, const std::function<absl::Status(int)>& call);
  // Times the skinny MMA kernel (both CTA heights) on a tuned plan's bucket
  // after checking it against cuBLASLt's output in `out_ref`; sets
  // plan.skinny and lowers *best_us when one beats it.
  absl::Status TuneSkinny(Plan& plan, const std::vector<const LinearLimits*>& weights, void* x,
                          Tensor out_ref, int64_t rows, float* best_us);
  absl::Status Tune(Plan& plan, const std::vector<const LinearLimits*>& weights, void* x,
                    void* out);
  /// Fills the first kGemvMaxRows rows of the widest activation with normal values.
  absl::Status FillRandomRows(void* x, const std::vector<LinearLimits>& linears, size_t capacity);
  /// FailedPrecondition naming the first element of `got` (the small-M
  /// kernel's) outside the bound around `want` (cuBLASLt's).
  absl::Status CompareOutputs(Tensor got, Tensor want);

  cudaStream_t stream_;
  cublasLtHandle_t handle_ = nullptr;
  cublasHandle_t fallback_ = nullptr;  // cublasGemmEx for shapes cuBLASLt declines
  DeviceBufferPtr workspace_;          // shared by both handles (one stream)
  std::map<Key, std::unique_ptr<Plan>> plans_;  // null plan: use GemmEx
  uint64_t uses_ = 0;                  // clock for evicting the least recently used plan
  bool evict_logged_ = false;
  bool tune_ = true;
  TuningSummary tuning_;
  bool gemv_allowed_ = true;  // false once the small-M kernel disagreed with cuBLASLt
  bool skinny_allowed_ = true;  // the same for the skinny MMA kernel
  std::vector<std::string> fallbacks_;
};

}  // namespace kvserve::cuda
