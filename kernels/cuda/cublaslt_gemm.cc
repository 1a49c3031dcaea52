#include "kernels/cuda/cublaslt_gemm.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>

#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/gemm_skinny_mma.h"
#include "kernels/cuda/gemv_small_m.h"

namespace kvserve::cuda {

struct CublasLtGemm::Plan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t w = nullptr, x = nullptr, out = nullptr;
  std::vector<cublasLtMatmulAlgo_t> algos;  // the heuristic's best first, for the bucket's end
  bool fused_bias = false;  // the epilogue adds the bias; else AddBias runs after
  int64_t rows = 0;         // what the x and out layouts say now
  int64_t bucket_begin = 0;
  // Per M of the bucket (index M − bucket_begin): kUnknown, kNone, or the
  // index of the first candidate cublasLtMatmulAlgoCheck accepted.
  std::vector<int8_t> choice;
  uint64_t last_use = 0;
  bool tuned = false;  // candidates timed and sorted (Tune)
  bool gemv = false;   // the small-M kernel beat every candidate (Tune): it runs this bucket
  int skinny = 0;      // else 16 or 32: the skinny MMA kernel with that many W rows per CTA did
  static constexpr int8_t kUnknown = -1, kNone = -2;

  ~Plan() {
    if (out) cublasLtMatrixLayoutDestroy(out);
    if (x) cublasLtMatrixLayoutDestroy(x);
    if (w) cublasLtMatrixLayoutDestroy(w);
    if (op) cublasLtMatmulDescDestroy(op);
  }
};

namespace {

// What enqueueing one GEMM costs the host, generously: the spin that fronts
// a timed batch of calls lasts this long per call.
constexpr double kHostEnqueueUs = 15;

cudaDataType_t CudaType(DType d) {
  switch (d) {
    case DType::kBFloat16: return CUDA_R_16BF;
    case DType::kFloat16: return CUDA_R_16F;
    default: return CUDA_R_32F;
  }
}

// Largest power of two (up to 256) dividing the address: what the heuristic
// may assume about the pointers it will be given.
int Alignment(const void* p) {
  const auto address = reinterpret_cast<uintptr_t>(p);
  int alignment = 256;
  while (alignment > 1 && address % alignment != 0) alignment /= 2;
  return alignment;
}

}  // namespace

CublasLtGemm::CublasLtGemm(cudaStream_t stream) : stream_(stream) {}

absl::StatusOr<std::unique_ptr<CublasLtGemm>> CublasLtGemm::Create(cudaStream_t stream,
                                                                   size_t workspace_bytes,
                                                                   bool tune, bool allow_gemv,
                                                                   bool allow_skinny) {
  std::unique_ptr<CublasLtGemm> g(new CublasLtGemm(stream));
  g->tune_ = tune;
  g->gemv_allowed_ = allow_gemv;
  g->skinny_allowed_ = allow_skinny;
  RETURN_IF_CUBLAS_ERROR(cublasLtCreate(&g->handle_));
  RETURN_IF_CUBLAS_ERROR(cublasCreate(&g->fallback_));
  RETURN_IF_CUBLAS_ERROR(cublasSetStream(g->fallback_, stream));
  // Strict float32 for float32 operands (no TF32), as the CPU reference computes.
  RETURN_IF_CUBLAS_ERROR(cublasSetMathMode(g->fallback_, CUBLAS_PEDANTIC_MATH));
  ASSIGN_OR_RETURN(g->workspace_, CudaBuffer::Allocate(workspace_bytes));
  // Without a workspace of its own, cuBLAS allocates one on its first call:
  // a cudaMalloc in the middle of a step. Both handles run on the one
  // stream, one call after the other, so they can share this one.
  RETURN_IF_CUBLAS_ERROR(
      cublasSetWorkspace(g->fallback_, g->workspace_->data(), g->workspace_->size()));
  return g;
}

int64_t CublasLtGemm::BucketEnd(int64_t rows) {
  constexpr int64_t kStep = 256;
  if (rows <= 1) return 1;
  if (rows > kStep) return (rows + kStep - 1) / kStep * kStep;
  int64_t end = 1;
  while (end < rows) end *= 2;
  return end;
}

int64_t CublasLtGemm::BucketBegin(int64_t rows) {
  const int64_t end = BucketEnd(rows);
  if (end <= 1) return 1;
  return end <= 256 ? end / 2 + 1 : end - 256 + 1;
}

CublasLtGemm::~CublasLtGemm() {
  plans_.clear();
  if (fallback_ != nullptr) {
    const cublasStatus_t s = cublasDestroy(fallback_);
    if (s != CUBLAS_STATUS_SUCCESS) {
      KV_LOG(ERROR) << "cublasDestroy: " << cublasGetStatusName(s);
    }
  }
  if (handle_ != nullptr) {
    const cublasStatus_t s = cublasLtDestroy(handle_);
    if (s != CUBLAS_STATUS_SUCCESS) {
      KV_LOG(ERROR) << "cublasLtDestroy: " << cublasGetStatusName(s);
    }
  }
}

absl::StatusOr<std::unique_ptr<CublasLtGemm::Plan>> CublasLtGemm::MakePlan(const Key& key,
                                                                           const void* bias) {
  const auto [rows, n, k, in_dtype, out_dtype, fused_bias, align_x, align_w, align_out,
              align_bias] = key;
  const cudaDataType_t in_type = CudaType(static_cast<DType>(in_dtype));
  const cudaDataType_t out_type = CudaType(static_cast<DType>(out_dtype));
  auto plan = std::make_unique<Plan>();
  plan->fused_bias = fused_bias;
  plan->rows = rows;
  plan->bucket_begin = BucketBegin(rows);
  plan->choice.assign(static_cast<size_t>(rows - plan->bucket_begin + 1), Plan::kUnknown);
  RETURN_IF_CUBLAS_ERROR(cublasLtMatmulDescCreate(&plan->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t transpose = CUBLAS_OP_T, no_transpose = CUBLAS_OP_N;
  RETURN_IF_CUBLAS_ERROR(cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_TRANSA,
                                                        &transpose, sizeof(transpose)));
  RETURN_IF_CUBLAS_ERROR(cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_TRANSB,
                                                        &no_transpose, sizeof(no_transpose)));
  if (fused_bias) {
    // The bias has the output's dtype (cuBLASLt's default bias type for BIAS).
    const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    RETURN_IF_CUBLAS_ERROR(cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                                          &epilogue, sizeof(epilogue)));
    // The heuristic reads the bias pointer's alignment (cublasLt.h): set before
    // it runs, with a null pointer it would choose for a maximally aligned bias.
    // Linear resets it per call; the key keeps its alignment class.
    RETURN_IF_CUBLAS_ERROR(cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                          &bias, sizeof(bias)));
  }
  // Column-major views: Wᵀ [K, N] (ld K), xᵀ [K, M] (ld K), outᵀ [N, M] (ld N).
  RETURN_IF_CUBLAS_ERROR(cublasLtMatrixLayoutCreate(&plan->w, in_type, k, n, k));
  RETURN_IF_CUBLAS_ERROR(cublasLtMatrixLayoutCreate(&plan->x, in_type, k, rows, k));
  RETURN_IF_CUBLAS_ERROR(cublasLtMatrixLayoutCreate(&plan->out, out_type, n, rows, n));

  cublasLtMatmulPreference_t pref = nullptr;
  RETURN_IF_CUBLAS_ERROR(cublasLtMatmulPreferenceCreate(&pref));
  // Destroy the preference on every path out of here.
  std::unique_ptr<void, void (*)(void*)> pref_guard(
      pref, [](void* p) { cublasLtMatmulPreferenceDestroy(static_cast<cublasLtMatmulPreference_t>(p)); });
  const size_t workspace_bytes = workspace_->size();
  RETURN_IF_CUBLAS_ERROR(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes, sizeof(workspace_bytes)));
  const uint32_t alignments[] = {static_cast<uint32_t>(align_w), static_cast<uint32_t>(align_x),
                                 static_cast<uint32_t>(align_out), static_cast<uint32_t>(align_out)};
  const cublasLtMatmulPreferenceAttributes_t alignment_attrs[] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  for (int i = 0; i < 4; ++i) {
    RETURN_IF_CUBLAS_ERROR(cublasLtMatmulPreferenceSetAttribute(pref, alignment_attrs[i],
                                                                &alignments[i], sizeof(uint32_t)));
  }
  cublasLtMatmulHeuristicResult_t results[kCandidates] = {};
  int found = 0;
  const cublasStatus_t heuristic = cublasLtMatmulAlgoGetHeuristic(
      handle_, plan->op, plan->w, plan->x, plan->out, plan->out, pref, kCandidates, results, &found);
  // NOT_SUPPORTED is how the heuristic declines some layouts; like found == 0
  // it sends the shape to GemmEx (or, for a fused bias, to the plain GEMM and
  // AddBias). So does any other refusal (INVALID_VALUE for a combination this
  // cuBLASLt does not take): cublasGemmEx computes every shape, so a declined
  // plan costs speed, never a failed step. Logged once: plans are cached.
  if (heuristic != CUBLAS_STATUS_SUCCESS || found == 0) {
    const std::string what = absl::StrCat(
        "cuBLASLt has no algorithm for [", rows, ", ", k, "] x [", n, ", ", k, "]ᵀ (",
        DTypeName(static_cast<DType>(in_dtype)), " -> ", DTypeName(static_cast<DType>(out_dtype)),
        fused_bias ? ", bias epilogue" : "", ", alignments ", align_x, "/", align_w, "/", align_out,
        fused_bias ? absl::StrCat("/", align_bias) : "", "): ",
        heuristic == CUBLAS_STATUS_SUCCESS ? "no result" : cublasGetStatusName(heuristic));
    if (heuristic != CUBLAS_STATUS_SUCCESS && heuristic != CUBLAS_STATUS_NOT_SUPPORTED) {
      KV_LOG(WARNING) << what << "; using the fallback";
    }
    return absl::NotFoundError(what);
  }
  for (int i = 0; i < found; ++i) {
    if (results[i].state == CUBLAS_STATUS_SUCCESS) plan->algos.push_back(results[i].algo);
  }
  if (plan->algos.empty()) return absl::NotFoundError("cuBLASLt: no usable algorithm");
  return plan;
}

absl::Status CublasLtGemm::SetRows(Plan& plan, int64_t rows) {
  if (plan.rows == rows) return absl::OkStatus();
  // Column-major xᵀ [K, M] and outᵀ [N, M]: M is the layouts' column count.
  const uint64_t cols = static_cast<uint64_t>(rows);
  RETURN_IF_CUBLAS_ERROR(
      cublasLtMatrixLayoutSetAttribute(plan.x, CUBLASLT_MATRIX_LAYOUT_COLS, &cols, sizeof(cols)));
  RETURN_IF_CUBLAS_ERROR(
      cublasLtMatrixLayoutSetAttribute(plan.out, CUBLASLT_MATRIX_LAYOUT_COLS, &cols, sizeof(cols)));
  plan.rows = rows;
  return absl::OkStatus();
}

absl::StatusOr<const cublasLtMatmulAlgo_t*> CublasLtGemm::Select(Plan& plan, int64_t rows) {
  plan.last_use = ++uses_;
  int8_t& choice = plan.choice[static_cast<size_t>(rows - plan.bucket_begin)];
  if (choice == Plan::kUnknown) {
    // The heuristic chose for the bucket's end; ask whether each candidate
    // also runs this M (and within the workspace), best first.
    RETURN_IF_ERROR(SetRows(plan, rows));
    choice = Plan::kNone;
    for (size_t i = 0; i < plan.algos.size(); ++i) {
      cublasLtMatmulHeuristicResult_t check{};
      const cublasStatus_t s = cublasLtMatmulAlgoCheck(handle_, plan.op, plan.w, plan.x, plan.out,
                                                       plan.out, &plan.algos[i], &check);
      if (s == CUBLAS_STATUS_SUCCESS && check.workspaceSize <= workspace_->size()) {
        choice = static_cast<int8_t>(i);
        break;
      }
    }
  }
  if (choice == Plan::kNone) return nullptr;
  return &plan.algos[static_cast<size_t>(choice)];
}

absl::StatusOr<CublasLtGemm::Plan*> CublasLtGemm::GetPlan(const Key& key, const void* bias) {
  auto it = plans_.find(key);
  if (it != plans_.end()) return it->second.get();
  if (plans_.size() >= kMaxPlans) {
    // More shapes than a model has (a test sweeping sizes): drop the least
    // recently used plan rather than grow. Declined (null) plans go first.
    auto victim = plans_.begin();
    for (auto i = plans_.begin(); i != plans_.end(); ++i) {
      const uint64_t use = i->second ? i->second->last_use : 0;
      if (use < (victim->second ? victim->second->last_use : 0)) victim = i;
    }
    plans_.erase(victim);
    if (!evict_logged_) {
      KV_LOG(WARNING) << "cuBLASLt plan cache full (" << kMaxPlans
                      << " plans): evicting the least recently used";
      evict_logged_ = true;
    }
  }
  absl::StatusOr<std::unique_ptr<Plan>> plan = MakePlan(key, bias);
  if (!plan.ok() && !absl::IsNotFound(plan.status())) return plan.status();
  // NotFound is remembered as a null plan: this bucket takes GemmEx from now on.
  Plan* raw = plan.ok() ? plan->get() : nullptr;
  plans_.emplace(key, plan.ok() ? *std::move(plan) : nullptr);
  return raw;
}

absl::StatusOr<CublasLtGemm::Choice> CublasLtGemm::Choose(int64_t rows, int64_t n, int64_t k,
                                                          DType in, DType out, bool fuse,
                                                          int align_x, int align_w, int align_out,
                                                          const void* bias) {
  Key key{BucketEnd(rows), n, k, static_cast<int>(in), static_cast<int>(out), fuse,
          align_x, align_w, align_out, fuse ? Alignment(bias) : 0};
  Choice c;
  ASSIGN_OR_RETURN(c.plan, GetPlan(key, fuse ? bias : nullptr));
  if (c.plan != nullptr) {
    ASSIGN_OR_RETURN(c.algo, Select(*c.plan, rows));
  }
  if (c.algo == nullptr && fuse) {
    std::get<5>(key) = false;  // no fused-bias kernel for this M: plain GEMM + AddBias
    std::get<9>(key) = 0;
    ASSIGN_OR_RETURN(c.plan, GetPlan(key, nullptr));
    if (c.plan != nullptr) {
      ASSIGN_OR_RETURN(c.algo, Select(*c.plan, rows));
    }
  }
  if (c.algo == nullptr) c.plan = nullptr;
  return c;
}

absl::Status CublasLtGemm::Tune(Plan& plan, const std::vector<const LinearLimits*>& weights,
                                void* x, void* out) {
  plan.tuned = true;
  if (plan.algos.empty() || weights.empty()) return absl::OkStatus();
  const int64_t rows = plan.choice.size() + plan.bucket_begin - 1;  // the bucket's end
  RETURN_IF_ERROR(SetRows(plan, rows));
  // Enough calls to cycle through every layer's weight (up to 64), at least 8.
  const int calls = std::clamp<int>(static_cast<int>(weights.size()), 8, 64);
  const float alpha = 1.f, beta = 0.f;
  auto run = [&](const cublasLtMatmulAlgo_t& algo, int i) -> cublasStatus_t {
    const LinearLimits& l = *weights[static_cast<size_t>(i) % weights.size()];
    if (plan.fused_bias) {
      const void* bias = l.bias.data;
      cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                     sizeof(bias));
    }
    return cublasLtMatmul(handle_, plan.op, &alpha, l.weight.data, plan.w, x, plan.x, &beta, out,
                          plan.out, out, plan.out, &algo, workspace_->data(), workspace_->size(),
                          stream_);
  };
  std::vector<std::pair<float, size_t>> times;  // µs per call, candidate index
  for (size_t c = 0; c < plan.algos.size(); ++c) {
    cublasLtMatmulHeuristicResult_t check{};
    if (cublasLtMatmulAlgoCheck(handle_, plan.op, plan.w, plan.x, plan.out, plan.out,
                                &plan.algos[c], &check) != CUBLAS_STATUS_SUCCESS ||
        check.workspaceSize > workspace_->size()) {
      times.emplace_back(INFINITY, c);
      continue;
    }
    if (run(plan.algos[c], 0) != CUBLAS_STATUS_SUCCESS) {  // the warm-up
      times.emplace_back(INFINITY, c);
      continue;
    }
    // A candidate that fails a call is never chosen (Aborted); a CUDA error is the caller's.
    const absl::StatusOr<float> us = TimeCalls(calls, [&](int i) {
      return run(plan.algos[c], i) == CUBLAS_STATUS_SUCCESS ? absl::OkStatus()
                                                            : absl::AbortedError("cublasLtMatmul");
    });
    if (!us.ok() && !absl::IsAborted(us.status())) return us.status();
    times.emplace_back(us.ok() ? *us : INFINITY, c);
  }
  std::stable_sort(times.begin(), times.end());
  if (!std::isfinite(times.front().first)) return absl::OkStatus();  // keep the heuristic's order
  std::vector<cublasLtMatmulAlgo_t> sorted;
  for (const auto& [us, c] : times) sorted.push_back(plan.algos[c]);
  const float first_us = [&] {
    for (const auto& [us, c] : times) {
      if (c == 0) return us;
    }
    return INFINITY;
  }();
  ++tuning_.plans_timed;
  if (times.front().second != 0) ++tuning_.plans_reordered;
  tuning_.heuristic_us += std::isfinite(first_us) ? first_us : times.front().first;
  tuning_.tuned_us += times.front().first;
  uint64_t n = 0, k = 0;
  size_t written = 0;
  cublasLtMatrixLayoutGetAttribute(plan.w, CUBLASLT_MATRIX_LAYOUT_ROWS, &k, sizeof(k), &written);
  cublasLtMatrixLayoutGetAttribute(plan.w, CUBLASLT_MATRIX_LAYOUT_COLS, &n, sizeof(n), &written);
  KV_LOG(DEBUG) << "cuBLASLt [" << rows << ", " << k << "] x [" << n << ", " << k << "]ᵀ: candidate "
                << times.front().second + 1 << " of " << plan.algos.size() << " fastest, "
                << times.front().first << " us (the heuristic's first: " << first_us << " us)";
  plan.algos = std::move(sorted);
  // Checks made against the old order (a Linear before Warmup) index it: redo them.
  std::fill(plan.choice.begin(), plan.choice.end(), Plan::kUnknown);
  // The small-M kernel (M ≤ 8) and the skinny MMA kernel (9-64) compete at
  // decode sizes, once they have computed what the best candidate computes.
  const LinearLimits& first = *weights.front();
  const Tensor xt(x, first.weight.dtype, {rows, first.weight.dim(1)});
  const Tensor bias = plan.fused_bias ? first.bias : Tensor();
  Tensor out_ref(out, first.out_dtype, {rows, first.weight.dim(0)});
  float best_us = times.front().first;
  if (rows > kGemvMaxRows && rows <= kSkinnyMaxRows && skinny_allowed_) {
    if (run(plan.algos.front(), 0) != CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
    return TuneSkinny(plan, weights, x, out_ref, rows, &best_us);
  }
  if (rows > kGemvMaxRows || !gemv_allowed_ ||
      !GemvSmallMServes(xt, first.weight, bias, out_ref)) {
    return absl::OkStatus();
  }
  Tensor out_gemv(static_cast<char*>(out) + out_ref.bytes(), first.out_dtype,
                  {rows, first.weight.dim(0)});
  if (run(plan.algos.front(), 0) != CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  RETURN_IF_ERROR(LaunchGemvSmallM(xt, first.weight, bias, out_gemv, stream_));
  if (absl::Status agree = CompareOutputs(out_gemv, out_ref); !agree.ok()) {
    gemv_allowed_ = false;
    fallbacks_.push_back("gemv_small_m");
    KV_LOG(ERROR) << "CUDA backend: the small-M GEMV kernel disagrees with cuBLASLt on this GPU; "
                  << "cuBLASLt serves every GEMM instead: " << agree.message();
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(const float gemv_us,
                   TimeCalls(calls, [&](int i) {
                     const LinearLimits& l = *weights[static_cast<size_t>(i) % weights.size()];
                     return LaunchGemvSmallM(xt, l.weight, plan.fused_bias ? l.bias : Tensor(),
                                             out_gemv, stream_);
                   }));
  if (gemv_us < best_us) {
    plan.gemv = true;
    ++tuning_.plans_gemv;
    tuning_.tuned_us -= best_us - gemv_us;
  }
  KV_LOG(DEBUG) << "  small-M GEMV: " << gemv_us << " us" << (plan.gemv ? " (chosen)" : "");
  return absl::OkStatus();
}

absl::StatusOr<float> CublasLtGemm::TimeCalls(int calls,
                                              const std::function<absl::Status(int)>& call) {
  ASSIGN_OR_RETURN(CudaEvent start, CudaEvent::CreateTimed());
  ASSIGN_OR_RETURN(CudaEvent stop, CudaEvent::CreateTimed());
  // Decode-sized products take a few µs, about what enqueueing one takes:
  // queue them behind a spin so that the events time the GPU, not the host.
  RETURN_IF_ERROR(LaunchSpin(kHostEnqueueUs * calls, stream_));
  RETURN_IF_CUDA_ERROR(cudaEventRecord(start.get(), stream_));
  for (int i = 0; i < calls; ++i) RETURN_IF_ERROR(call(i));
  RETURN_IF_CUDA_ERROR(cudaEventRecord(stop.get(), stream_));
  RETURN_IF_CUDA_ERROR(cudaEventSynchronize(stop.get()));
  float ms = 0;
  RETURN_IF_CUDA_ERROR(cudaEventElapsedTime(&ms, start.get(), stop.get()));
  return ms * 1000.f / calls;
}

absl::Status CublasLtGemm::TuneSkinny(Plan& plan, const std::vector<const LinearLimits*>& weights,
                                      void* x, Tensor out_ref, int64_t rows, float* best_us) {
  const LinearLimits& first = *weights.front();
  const Tensor xt(x, first.weight.dtype, {rows, first.weight.dim(1)});
  const Tensor bias = plan.fused_bias ? first.bias : Tensor();
  Tensor out_fast(static_cast<char*>(out_ref.data) + out_ref.bytes(), out_ref.dtype,
                  {rows, first.weight.dim(0)});
  const int calls = std::clamp<int>(static_cast<int>(weights.size()), 8, 64);
  for (int rows_per_cta : {16, 32}) {
    if (!SkinnyMmaServes(xt, first.weight, bias, out_fast, rows_per_cta)) continue;
    RETURN_IF_ERROR(LaunchSkinnyMma(xt, first.weight, bias, out_fast, rows_per_cta, stream_));
    if (absl::Status agree = CompareOutputs(out_fast, out_ref); !agree.ok()) {
      skinny_allowed_ = false;
      fallbacks_.push_back("gemm_skinny_mma");
      KV_LOG(ERROR) << "CUDA backend: the skinny MMA kernel disagrees with cuBLASLt on this GPU; "
                    << "cuBLASLt serves every GEMM instead: " << agree.message();
      plan.skinny = 0;
      return absl::OkStatus();
    }
    ASSIGN_OR_RETURN(const float us, TimeCalls(calls, [&](int i) {
                       const LinearLimits& l = *weights[static_cast<size_t>(i) % weights.size()];
                       return LaunchSkinnyMma(xt, l.weight, plan.fused_bias ? l.bias : Tensor(),
                                              out_fast, rows_per_cta, stream_);
                     }));
    KV_LOG(DEBUG) << "  skinny MMA, " << rows_per_cta << " rows per CTA: " << us << " us";
    if (us < *best_us) {
      if (plan.skinny == 0) ++tuning_.plans_skinny;
      tuning_.tuned_us -= *best_us - us;
      *best_us = us;
      plan.skinny = rows_per_cta;
    }
  }
  return absl::OkStatus();
}

absl::Status CublasLtGemm::CompareOutputs(Tensor got, Tensor want) {
  const int64_t n = want.numel();
  std::vector<uint8_t> got_bytes(got.bytes()), want_bytes(want.bytes());
  RETURN_IF_CUDA_ERROR(cudaMemcpyAsync(got_bytes.data(), got.data, got.bytes(),
                                       cudaMemcpyDeviceToHost, stream_));
  RETURN_IF_CUDA_ERROR(cudaMemcpyAsync(want_bytes.data(), want.data, want.bytes(),
                                       cudaMemcpyDeviceToHost, stream_));
  RETURN_IF_CUDA_ERROR(cudaStreamSynchronize(stream_));
  std::vector<float> g(n), w(n);
  RETURN_IF_ERROR(ConvertToFloat32(got_bytes.data(), got.dtype, n, g.data()));
  RETURN_IF_ERROR(ConvertToFloat32(want_bytes.data(), want.dtype, n, w.data()));
  double scale = 1;
  for (float v : w) scale = std::max(scale, double(std::fabs(v)));
  // Both sum the same float32 products in another order; the output is
  // rounded once to its dtype (bf16: 2⁻⁸ relative).
  const double rtol = want.dtype == DType::kFloat32 ? 1e-4 : 2e-2;
  for (int64_t i = 0; i < n; ++i) {
    const double allowed = rtol * (0.05 * scale + std::fabs(w[i]));
    if (!std::isfinite(g[i]) || std::fabs(double(g[i]) - w[i]) > allowed) {
      return absl::FailedPreconditionError(absl::StrCat("element ", i, " of ", n, ": ", g[i],
                                                        " where cuBLASLt gives ", w[i]));
    }
  }
  return absl::OkStatus();
}

absl::Status CublasLtGemm::FillRandomRows(void* x, const std::vector<LinearLimits>& linears,
                                          size_t capacity) {
  int64_t k_max = 0;
  DType dtype = DType::kBFloat16;
  for (const LinearLimits& l : linears) {
    if (l.weight.empty()) continue;
    k_max = std::max(k_max, l.weight.dim(1));
    dtype = l.weight.dtype;
  }
  if (dtype != DType::kBFloat16 && dtype != DType::kFloat16) return absl::OkStatus();
  const int64_t n = std::min<int64_t>(std::max(kGemvMaxRows, kSkinnyMaxRows) * k_max,
                                      int64_t(capacity / DTypeSize(dtype)));
  std::mt19937 rng(42);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<float> values(n);
  for (float& v : values) v = normal(rng);
  std::vector<uint8_t> bytes(DTypeBytes(dtype, n));
  RETURN_IF_ERROR(ConvertFromFloat32(values.data(), n, dtype, bytes.data()));
  RETURN_IF_CUDA_ERROR(cudaMemcpyAsync(x, bytes.data(), bytes.size(), cudaMemcpyHostToDevice, stream_));
  RETURN_IF_CUDA_ERROR(cudaStreamSynchronize(stream_));
  return absl::OkStatus();
}

absl::Status CublasLtGemm::Warmup(const std::vector<LinearLimits>& linears, int decode_rows) {
  constexpr int kActivationAlignment = 256;  // cudaMalloc's
  if (tune_) {
    // The layers' weights of each shape, and scratch activations for the largest.
    std::map<std::tuple<int64_t, int64_t, int, int, bool>, std::vector<const LinearLimits*>> shapes;
    size_t x_bytes = 0, out_bytes = 0;
    for (const LinearLimits& l : linears) {
      if (l.weight.empty() || l.max_rows <= 0) continue;
      const bool fuse = !l.bias.empty() && l.bias.dtype == l.out_dtype;
      shapes[{l.weight.dim(0), l.weight.dim(1), static_cast<int>(l.weight.dtype),
              static_cast<int>(l.out_dtype), fuse}]
          .push_back(&l);
      const int64_t rows = BucketEnd(l.max_rows);
      x_bytes = std::max(x_bytes, DTypeBytes(l.weight.dtype, rows * l.weight.dim(1)));
      out_bytes = std::max(out_bytes, DTypeBytes(l.out_dtype, rows * l.weight.dim(0)));
    }
    if (!shapes.empty()) {
      ASSIGN_OR_RETURN(DeviceBufferPtr x, CudaBuffer::Allocate(std::max<size_t>(x_bytes, 256)));
      // Twice the largest output: the small-M kernel's result sits beside cuBLASLt's.
      ASSIGN_OR_RETURN(DeviceBufferPtr out,
                       CudaBuffer::Allocate(2 * std::max<size_t>(out_bytes, 256)));
      RETURN_IF_CUDA_ERROR(cudaMemsetAsync(x->data(), 0, x->size(), stream_));
      // The first kSkinnyMaxRows rows random: the small-M and skinny kernels
      // are compared with cuBLASLt on them (zeros would agree whatever a
      // kernel does).
      RETURN_IF_ERROR(FillRandomRows(x->data(), linears, x->size()));
      for (const auto& [shape, layers] : shapes) {
        const auto [n, k, in, out_dtype, fuse] = shape;
        const LinearLimits& first = *layers.front();
        for (int64_t rows = 1; rows <= first.max_rows; rows = BucketEnd(rows) + 1) {
          const int64_t end = BucketEnd(rows);
          Key key{end, n, k, in, out_dtype, fuse, kActivationAlignment,
                  Alignment(first.weight.data), kActivationAlignment,
                  fuse ? Alignment(first.bias.data) : 0};
          ASSIGN_OR_RETURN(Plan* plan, GetPlan(key, fuse ? first.bias.data : nullptr));
          if (plan != nullptr && !plan->tuned) {
            RETURN_IF_ERROR(Tune(*plan, layers, x->data(), out->data()));
          }
        }
      }
      RETURN_IF_CUDA_ERROR(cudaStreamSynchronize(stream_));  // before the scratch is freed
    }
  }
  for (const LinearLimits& l : linears) {
    if (l.weight.empty() || l.max_rows <= 0) continue;
    const int64_t n = l.weight.dim(0), k = l.weight.dim(1);
    const bool fuse = !l.bias.empty() && l.bias.dtype == l.out_dtype;
    const int align_w = Alignment(l.weight.data);
    // One Choose per bucket plans it; the decode M's each get their check.
    for (int64_t rows = 1; rows <= l.max_rows;) {
      ASSIGN_OR_RETURN(Choice c, Choose(rows, n, k, l.weight.dtype, l.out_dtype, fuse,
                                        kActivationAlignment, align_w, kActivationAlignment,
                                        fuse ? l.bias.data : nullptr));
      (void)c;
      rows = rows < decode_rows ? rows + 1 : BucketEnd(rows) + 1;
    }
  }
  return absl::OkStatus();
}

absl::Status CublasLtGemm::GemmEx(Tensor x, Tensor weight, Tensor out) {
  const int rows = static_cast<int>(x.dim(0)), k = static_cast<int>(x.dim(1));
  const int n = static_cast<int>(weight.dim(0));
  const float alpha = 1.f, beta = 0.f;
  // The same column-major "TN" product as the cuBLASLt path.
  RETURN_IF_CUBLAS_ERROR(cublasGemmEx(fallback_, CUBLAS_OP_T, CUBLAS_OP_N, n, rows, k, &alpha,
                                      weight.data, CudaType(weight.dtype), k, x.data,
                                      CudaType(x.dtype), k, &beta, out.data, CudaType(out.dtype), n,
                                      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  return absl::OkStatus();
}

absl::Status CublasLtGemm::SiluMulLinear(Tensor gate_up, Tensor act, Tensor weight, Tensor bias,
                                         Tensor out, bool fuse) {
  const int64_t rows = act.dim(0);
  const bool has_bias = !bias.empty();
  if (fuse && rows >= 1 && rows <= kGemvMaxRows && weight.dim(0) > 0) {
    // The same choice Linear(act, ...) makes, so tuning decides both alike.
    const bool fuse_bias = has_bias && bias.dtype == out.dtype;
    ASSIGN_OR_RETURN(const Choice c, Choose(rows, weight.dim(0), act.dim(1), act.dtype, out.dtype,
                                            fuse_bias, Alignment(act.data),
                                            Alignment(weight.data), Alignment(out.data),
                                            fuse_bias ? bias.data : nullptr));
    if (c.plan != nullptr && c.plan->gemv && gemv_allowed_) {
      const Tensor fused = c.plan->fused_bias ? bias : Tensor();
      if (GemvSiluMulServes(gate_up, weight, fused, out)) {
        RETURN_IF_ERROR(LaunchGemvSiluMul(gate_up, weight, fused, out, stream_));
        if (has_bias && !c.plan->fused_bias) RETURN_IF_ERROR(LaunchAddBias(bias, out, stream_));
        return absl::OkStatus();
      }
    }
  }
  RETURN_IF_ERROR(LaunchSiluMul(gate_up, act, stream_));
  return Linear(act, weight, bias, out);
}

absl::StatusOr<bool> CublasLtGemm::RmsNormLinear(Tensor residual, Tensor delta, Tensor norm_weight,
                                                 float eps, int* counter, Tensor normed,
                                                 Tensor weight, Tensor bias, Tensor out) {
  const int64_t rows = normed.dim(0);
  if (rows < 1 || rows > kGemvRmsNormMaxRows || weight.dim(0) == 0) return false;
  // The same choice Linear(normed, ...) makes, so tuning decides both alike.
  const bool fuse_bias = !bias.empty() && bias.dtype == out.dtype;
  ASSIGN_OR_RETURN(const Choice c, Choose(rows, weight.dim(0), normed.dim(1), normed.dtype,
                                          out.dtype, fuse_bias, Alignment(normed.data),
                                          Alignment(weight.data), Alignment(out.data),
                                          fuse_bias ? bias.data : nullptr));
  if (c.plan == nullptr || !c.plan->gemv || !gemv_allowed_) return false;
  const Tensor fused = c.plan->fused_bias ? bias : Tensor();
  if (!GemvRmsNormServes(residual, delta, norm_weight, weight, fused, out)) return false;
  RETURN_IF_ERROR(
      LaunchGemvRmsNorm(residual, delta, norm_weight, eps, counter, weight, fused, out, stream_));
  if (!bias.empty() && !c.plan->fused_bias) RETURN_IF_ERROR(LaunchAddBias(bias, out, stream_));
  return true;
}

absl::Status CublasLtGemm::Linear(Tensor x, Tensor weight, Tensor bias, Tensor out) {
  const int64_t rows = x.dim(0), n = weight.dim(0);
  if (rows == 0 || n == 0) return absl::OkStatus();
  const bool has_bias = !bias.empty();
  // The epilogue's bias has the output's dtype; a float32 output with a
  // bf16 bias (never used by the model) takes the separate kernel.
  const bool fuse = has_bias && bias.dtype == out.dtype;
  ASSIGN_OR_RETURN(const Choice c,
                   Choose(rows, n, x.dim(1), x.dtype, out.dtype, fuse, Alignment(x.data),
                          Alignment(weight.data), Alignment(out.data), fuse ? bias.data : nullptr));
  if (c.plan == nullptr) {
    RETURN_IF_ERROR(GemmEx(x, weight, out));
    if (has_bias) RETURN_IF_ERROR(LaunchAddBias(bias, out, stream_));
    return absl::OkStatus();
  }
  Plan& p = *c.plan;
  if (p.skinny > 0 && skinny_allowed_) {  // not once it disagreed on another bucket
    const Tensor fused = p.fused_bias ? bias : Tensor();
    if (SkinnyMmaServes(x, weight, fused, out, p.skinny)) {
      RETURN_IF_ERROR(LaunchSkinnyMma(x, weight, fused, out, p.skinny, stream_));
      if (has_bias && !p.fused_bias) RETURN_IF_ERROR(LaunchAddBias(bias, out, stream_));
      return absl::OkStatus();
    }
  }
  if (p.gemv && gemv_allowed_ && rows <= kGemvMaxRows) {
    const Tensor fused = p.fused_bias ? bias : Tensor();
    if (GemvSmallMServes(x, weight, fused, out)) {
      RETURN_IF_ERROR(LaunchGemvSmallM(x, weight, fused, out, stream_));
      if (has_bias && !p.fused_bias) RETURN_IF_ERROR(LaunchAddBias(bias, out, stream_));
      return absl::OkStatus();
    }
  }
  RETURN_IF_ERROR(SetRows(p, rows));
  if (p.fused_bias) {
    const void* bias_ptr = bias.data;
    RETURN_IF_CUBLAS_ERROR(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                          &bias_ptr, sizeof(bias_ptr)));
  }
  const float alpha = 1.f, beta = 0.f;
  RETURN_IF_CUBLAS_ERROR(cublasLtMatmul(handle_, p.op, &alpha, weight.data, p.w, x.data, p.x,
                                        &beta, out.data, p.out, out.data, p.out, c.algo,
                                        workspace_->data(), workspace_->size(), stream_));
  if (has_bias && !p.fused_bias) RETURN_IF_ERROR(LaunchAddBias(bias, out, stream_));
  return absl::OkStatus();
}

}  // namespace kvserve::cuda
