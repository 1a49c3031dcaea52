#include "kernels/cuda/cuda_backend.h"

#include <chrono>
#include <cstring>
#include <initializer_list>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/decode_attention.h"
#include "kernels/cuda/pdl.h"
#include "kernels/cuda/device_info.h"
#include "kernels/cuda/dispatch.h"
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/flash_decode.h"
#include "kernels/cuda/kernel_self_check.h"
#include "kernels/cuda/kv_cache_write.h"
#include "kernels/cuda/prefill_attention.h"
#include "kernels/cuda/prefill_mma.h"
#include "kernels/cuda/rmsnorm.cuh"
#include "kernels/cuda/rope_split.h"
#include "kernels/cuda/sample.h"
#include "kernels/op_checks.h"

namespace kvserve::cuda {
namespace {

// The attention kernels read and write whole 16-byte vectors.
absl::Status RequireAligned16(absl::string_view op, std::initializer_list<const Tensor*> tensors) {
  for (const Tensor* t : tensors) {
    if (reinterpret_cast<uintptr_t>(t->data) % 16 != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(op, ": the CUDA backend needs 16-byte aligned tensors, got ",
                       t->DebugString(), " at ", absl::Hex(reinterpret_cast<uintptr_t>(t->data))));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<CudaBackend>> CudaBackend::Create(const CudaBackendOptions& options) {
  if (options.dtype == DType::kInt32) {
    return absl::InvalidArgumentError("the CUDA backend computes in float32, bfloat16 or float16");
  }
  if (DeviceCount() == 0) {
    return absl::FailedPreconditionError(absl::StrCat("--device cuda: ", DescribeDevice()));
  }
  std::unique_ptr<CudaBackend> b(new CudaBackend());
  b->dtype_ = options.dtype;
  b->graphs_enabled_ = options.graphs;
  b->fast_ = options.fast_kernels;
  RETURN_IF_CUDA_ERROR(cudaSetDevice(0));
  cudaDeviceProp prop{};
  RETURN_IF_CUDA_ERROR(cudaGetDeviceProperties(&prop, 0));
  b->num_sms_ = prop.multiProcessorCount;
  // griddepcontrol needs sm_90; below it the launches stay ordinary.
  b->fast_.pdl = options.fast_kernels.pdl && prop.major >= 9;
  SetProgrammaticLaunch(b->fast_.pdl);
  b->device_name_ =
      absl::StrFormat("%s (sm_%d%d, %d SMs)", prop.name, prop.major, prop.minor, prop.multiProcessorCount);
  RETURN_IF_ERROR(CheckKernelImage());
  ASSIGN_OR_RETURN(b->stream_, CudaStream::Create());
  ASSIGN_OR_RETURN(b->staging_,
                   PinnedStaging::Create(b->stream_.get(), options.staging_slot_bytes, /*num_slots=*/2));
  ASSIGN_OR_RETURN(b->gemm_, CublasLtGemm::Create(b->stream_.get(), options.gemm_workspace_bytes,
                                                  options.tune_gemms,
                                                  options.fast_kernels.gemv_small_m,
                                                  options.fast_kernels.gemm_skinny_mma));
  ASSIGN_OR_RETURN(b->error_device_, CudaBuffer::Allocate(sizeof(DeviceError)));
  ASSIGN_OR_RETURN(b->gemv_counter_, CudaBuffer::Allocate(sizeof(int)));
  RETURN_IF_CUDA_ERROR(cudaMemsetAsync(b->gemv_counter_->data(), 0, sizeof(int), b->stream_.get()));
  ASSIGN_OR_RETURN(b->error_host_, PinnedBuffer::Allocate(sizeof(DeviceError)));
  std::memset(b->error_host_.data(), 0, sizeof(DeviceError));
  RETURN_IF_CUDA_ERROR(
      cudaMemsetAsync(b->error_device_->data(), 0, sizeof(DeviceError), b->stream_.get()));
  RETURN_IF_CUDA_ERROR(cudaStreamSynchronize(b->stream_.get()));
  return b;
}

CudaBackend::~CudaBackend() {
  if (stream_.get() != nullptr) {
    const cudaError_t err = cudaStreamSynchronize(stream_.get());
    if (err != cudaSuccess) {
      KV_LOG(ERROR) << "CudaBackend: cudaStreamSynchronize: " << cudaGetErrorString(err);
    }
  }
}

absl::Status CudaBackend::BeginCapture(int bucket) {
  if (!graphs_enabled_) return absl::FailedPreconditionError("CUDA graphs are off (--cuda_graphs)");
  if (bucket < 0) return absl::InvalidArgumentError(absl::StrCat("graph bucket ", bucket, " < 0"));
  // Thread-local mode: another thread's unsafe CUDA call (an allocation, a
  // synchronization) does not invalidate this capture; the engine thread
  // makes none while capturing (Reserve sized everything before).
  RETURN_IF_CUDA_ERROR(cudaStreamBeginCapture(stream(), cudaStreamCaptureModeThreadLocal));
  return absl::OkStatus();
}

absl::Status CudaBackend::EndCapture(int bucket) {
  cudaGraph_t graph = nullptr;
  RETURN_IF_CUDA_ERROR(cudaStreamEndCapture(stream(), &graph));
  absl::StatusOr<CudaGraphExec> exec = CudaGraphExec::Instantiate(graph);
  // The instance does not need the description any more.
  if (const cudaError_t err = cudaGraphDestroy(graph); err != cudaSuccess) {
    KV_LOG(ERROR) << "cudaGraphDestroy: " << cudaGetErrorString(err);
  }
  if (!exec.ok()) return exec.status();
  if (static_cast<size_t>(bucket) >= graphs_.size()) graphs_.resize(bucket + 1);
  graphs_[bucket] = *std::move(exec);
  return absl::OkStatus();
}

absl::Status CudaBackend::Replay(int bucket) {
  if (bucket < 0 || static_cast<size_t>(bucket) >= graphs_.size() || graphs_[bucket].get() == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat("no CUDA graph recorded for bucket ", bucket));
  }
  RETURN_IF_CUDA_ERROR(cudaGraphLaunch(graphs_[bucket].get(), stream()));
  return absl::OkStatus();
}

absl::StatusOr<DeviceMemoryInfo> CudaBackend::MemoryInfo() {
  DeviceMemoryInfo info;
  RETURN_IF_CUDA_ERROR(cudaMemGetInfo(&info.free_bytes, &info.total_bytes));
  return info;
}

absl::Status CudaBackend::Reserve(const StepLimits& limits) {
  const AttentionShape& shape = limits.attention;
  if (shape.head_dim > 0) {
    RETURN_IF_ERROR(DispatchHeadDim(shape.head_dim, [](auto) { return absl::OkStatus(); }));
  }
  const size_t floats =
      shape.head_dim > 0 ? MaxDecodeWorkspaceFloats(limits.max_seqs, shape, limits.max_context,
                                                    num_sms_)
                         : 0;
  if (floats > decode_workspace_floats_) {
    // Before the first step: nothing queued reads the old buffer (cudaFree
    // would wait for it anyway).
    decode_workspace_.reset();
    decode_workspace_floats_ = 0;
    ASSIGN_OR_RETURN(decode_workspace_, CudaBuffer::Allocate(floats * sizeof(float)));
    decode_workspace_floats_ = floats;
  }
  // The flash-decode workspace and counters, for whichever served block
  // size the KV cache will have (it is made after Reserve).
  FlashDecodeReservation flash;
  if (shape.head_dim > 0 && shape.num_kv_heads > 0) {
    const int resident = FlashDecodeResidentCtas(dtype_, shape.head_dim, kServedBlockSizes[0],
                                                 shape.num_heads / shape.num_kv_heads);
    if (resident > 0) flash_ctas_per_sm_ = resident;
    for (int block_size : kServedBlockSizes) {
      const FlashDecodeReservation r =
          MaxFlashDecodeReservation(limits.max_seqs, shape, dtype_, block_size,
                                    limits.max_context, num_sms_, flash_ctas_per_sm_);
      flash.workspace_floats = std::max(flash.workspace_floats, r.workspace_floats);
      flash.counters = std::max(flash.counters, r.counters);
    }
  }
  if (flash.workspace_floats > flash_workspace_floats_) {
    flash_workspace_.reset();
    flash_workspace_floats_ = 0;
    ASSIGN_OR_RETURN(flash_workspace_, CudaBuffer::Allocate(flash.workspace_floats * sizeof(float)));
    flash_workspace_floats_ = flash.workspace_floats;
  }
  if (flash.counters > flash_counters_size_) {
    flash_counters_.reset();
    flash_counters_size_ = 0;
    ASSIGN_OR_RETURN(flash_counters_, CudaBuffer::Allocate(flash.counters * sizeof(int)));
    RETURN_IF_CUDA_ERROR(
        cudaMemsetAsync(flash_counters_->data(), 0, flash.counters * sizeof(int), stream()));
    flash_counters_size_ = flash.counters;
  }
  if (shape.head_dim > 0) {
    const PrefillMmaReservation pr = MaxPrefillMmaReservation(shape.head_dim, num_sms_);
    if (pr.workspace_floats > prefill_workspace_floats_) {
      prefill_workspace_.reset();
      prefill_workspace_floats_ = 0;
      ASSIGN_OR_RETURN(prefill_workspace_,
                       CudaBuffer::Allocate(pr.workspace_floats * sizeof(float)));
      prefill_workspace_floats_ = pr.workspace_floats;
    }
    if (pr.counters > prefill_counters_size_) {
      prefill_counters_.reset();
      prefill_counters_size_ = 0;
      ASSIGN_OR_RETURN(prefill_counters_, CudaBuffer::Allocate(pr.counters * sizeof(int)));
      RETURN_IF_CUDA_ERROR(
          cudaMemsetAsync(prefill_counters_->data(), 0, pr.counters * sizeof(int), stream()));
      prefill_counters_size_ = pr.counters;
    }
  }
  RETURN_IF_ERROR(SelfCheckFastKernels(limits));
  const auto start = std::chrono::steady_clock::now();
  RETURN_IF_ERROR(gemm_->Warmup(limits.linears, limits.max_seqs));
  KV_LOG(INFO) << "CUDA backend: decode split workspace " << (decode_workspace_floats_ * 4 >> 20)
               << " MiB for " << limits.max_seqs << " sequences of up to " << limits.max_context
               << " tokens; " << gemm_->num_plans() << " GEMM plans in "
               << std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                      .count()
               << " ms";
  const CublasLtGemm::TuningSummary& tuning = gemm_->tuning();
  if (tuning.plans_timed > 0) {
    KV_LOG(INFO) << "CUDA backend: timed the cuBLASLt candidates of " << tuning.plans_timed
                 << " GEMM plans; the fastest was not the heuristic's first in "
                 << tuning.plans_reordered << ", and the small-M kernel beat them all in "
                 << tuning.plans_gemv << " and the skinny MMA kernel in " << tuning.plans_skinny
                 << " (one call of each plan: "
                 << absl::StrFormat("%.1f", tuning.heuristic_us) << " us as ranked, "
                 << absl::StrFormat("%.1f", tuning.tuned_us) << " us tuned)";
  }
  return absl::OkStatus();
}

absl::Status CudaBackend::SelfCheckFastKernels(const StepLimits& limits) {
  const SelfCheckDevice device{stream(), static_cast<DeviceError*>(error_device_->data()),
                               num_sms_, flash_ctas_per_sm_,
                               static_cast<int*>(gemv_counter_->data())};
  const AttentionShape& shape = limits.attention;
  // A disagreement falls back. So does an error that leaves the device
  // usable (a launch the configuration refused, a plan the kernel rejected):
  // the reference then serves. A sticky error (an illegal address) poisons
  // the whole context, and a reference that reports an error means the check
  // itself is broken: start-up fails with either.
  auto check = [&](bool& enabled, const char* kernel, auto run) -> absl::Status {
    if (!enabled) return absl::OkStatus();
    absl::Status s = run();
    if (s.ok()) return s;
    if (!absl::IsFailedPrecondition(s)) {
      if (!absl::IsInternal(s) || s.message().find("reference") != absl::string_view::npos) {
        return s;
      }
      if (cudaDeviceSynchronize() != cudaSuccess) return s;  // sticky: the context is gone
      cudaGetLastError();
      RETURN_IF_CUDA_ERROR(
          cudaMemsetAsync(error_device_->data(), 0, sizeof(DeviceError), stream()));
    }
    enabled = false;
    FallBack(kernel, s);
    return absl::OkStatus();
  };
  const auto start = std::chrono::steady_clock::now();
  if (shape.head_dim > 0) {
    for (int block_size : kServedBlockSizes) {
      RETURN_IF_ERROR(check(fast_.flash_decode, "flash_decode", [&] {
        return SelfCheckFlashDecode(device, dtype_, shape, block_size);
      }));
      RETURN_IF_ERROR(check(fast_.prefill_mma, "prefill_mma", [&] {
        return SelfCheckPrefillMma(device, dtype_, shape, block_size);
      }));
      RETURN_IF_ERROR(check(fast_.rope_kv_write, "rope_kv_write", [&] {
        return SelfCheckRopeKvWrite(device, dtype_, shape, block_size);
      }));
    }
  }
  RETURN_IF_ERROR(check(fast_.rmsnorm, "rmsnorm", [&] {
    return SelfCheckRmsNorm(device, dtype_, limits.hidden_size);
  }));
  if (!fast_.gemv_small_m) fast_.gemv_silu_mul = false;  // it only ever replaces that kernel
  RETURN_IF_ERROR(check(fast_.gemv_silu_mul, "gemv_silu_mul",
                        [&] { return SelfCheckGemvSiluMul(device, dtype_); }));
  if (!fast_.gemv_small_m) fast_.gemv_rmsnorm = false;
  RETURN_IF_ERROR(check(fast_.gemv_rmsnorm, "gemv_rmsnorm", [&] {
    return SelfCheckGemvRmsNorm(device, dtype_, limits.hidden_size);
  }));
  KV_LOG(INFO) << "CUDA backend: fast kernels checked against the reference in "
               << std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                      .count()
               << " ms; serving: " << fast_.ToString() << " (flash decode plans "
               << flash_ctas_per_sm_ << " CTAs per SM)";
  return absl::OkStatus();
}

std::vector<std::string> CudaBackend::KernelFallbacks() const {
  std::vector<std::string> all = fallbacks_;
  for (const std::string& k : gemm_->fallbacks()) all.push_back(k);
  return all;
}

void CudaBackend::FallBack(const std::string& kernel, const absl::Status& why) {
  KV_LOG(ERROR) << "CUDA backend: the fast kernel " << kernel
                << " disagrees with its reference on this GPU; the reference serves instead: "
                << why.message();
  fallbacks_.push_back(kernel);
}

absl::Status CudaBackend::EnqueueErrorFetch() {
  RETURN_IF_CUDA_ERROR(cudaMemcpyAsync(error_host_.data(), error_device_->data(),
                                       sizeof(DeviceError), cudaMemcpyDeviceToHost, stream()));
  return absl::OkStatus();
}

absl::Status CudaBackend::TakeDeviceError() {
  auto* e = static_cast<DeviceError*>(error_host_.data());
  if (e->code == 0) return absl::OkStatus();
  absl::Status status = DeviceErrorStatus(*e);
  std::memset(e, 0, sizeof(DeviceError));
  RETURN_IF_CUDA_ERROR(cudaMemsetAsync(error_device_->data(), 0, sizeof(DeviceError), stream()));
  return status;
}

absl::StatusOr<DeviceBufferPtr> CudaBackend::Allocate(size_t bytes) {
  return CudaBuffer::Allocate(bytes);
}

absl::Status CudaBackend::CopyToDevice(const void* host, size_t bytes, void* device) {
  return staging_->ToDevice(host, bytes, device);
}

absl::Status CudaBackend::CopyToHost(const void* device, size_t bytes, void* host) {
  if (bytes > staging_->slot_bytes()) {
    // Large copies (captured logits of a big vocabulary): straight into the
    // pageable destination; the call returns once the copy is done.
    RETURN_IF_CUDA_ERROR(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream()));
    RETURN_IF_ERROR(EnqueueErrorFetch());
    RETURN_IF_CUDA_ERROR(cudaStreamSynchronize(stream()));
    return TakeDeviceError();
  }
  ASSIGN_OR_RETURN(PinnedStaging::Slot slot, staging_->Acquire());
  if (bytes > 0) {
    RETURN_IF_CUDA_ERROR(cudaMemcpyAsync(slot.data, device, bytes, cudaMemcpyDeviceToHost, stream()));
  }
  RETURN_IF_ERROR(EnqueueErrorFetch());
  RETURN_IF_CUDA_ERROR(cudaStreamSynchronize(stream()));
  RETURN_IF_ERROR(staging_->Release(slot));
  // A kernel's error means the copied data may be garbage: report it instead.
  RETURN_IF_ERROR(TakeDeviceError());
  if (bytes > 0) std::memcpy(host, slot.data, bytes);
  return absl::OkStatus();
}

absl::Status CudaBackend::Upload(const void* host, DType src_dtype, Tensor dst) {
  return staging_->UploadConverted(host, src_dtype, dst.numel(), dst.dtype, dst.data);
}

absl::Status CudaBackend::Synchronize() {
  RETURN_IF_ERROR(EnqueueErrorFetch());
  RETURN_IF_CUDA_ERROR(cudaStreamSynchronize(stream()));
  return TakeDeviceError();
}

absl::Status CudaBackend::Embedding(Tensor ids, Tensor table, Tensor out) {
  RETURN_IF_ERROR(CheckEmbedding(ids, table, out));
  return LaunchEmbedding(ids, table, out, static_cast<DeviceError*>(error_device_->data()), stream());
}

absl::Status CudaBackend::RmsNorm(Tensor x, Tensor weight, float eps, Tensor out) {
  RETURN_IF_ERROR(CheckRmsNorm(x, weight, out));
  if (fast_.rmsnorm) return LaunchRmsNormFast(Tensor(), x, weight, eps, out, stream());
  return LaunchRmsNorm(Tensor(), x, weight, eps, out, stream());
}

absl::Status CudaBackend::AddRmsNorm(Tensor residual, Tensor x, Tensor weight, float eps,
                                     Tensor out) {
  RETURN_IF_ERROR(CheckAddRmsNorm(residual, x, weight, out));
  if (fast_.rmsnorm) return LaunchRmsNormFast(residual, x, weight, eps, out, stream());
  return LaunchRmsNorm(residual, x, weight, eps, out, stream());
}

absl::Status CudaBackend::Linear(Tensor x, Tensor weight, Tensor bias, Tensor out) {
  RETURN_IF_ERROR(CheckLinear(x, weight, bias, out));
  return gemm_->Linear(x, weight, bias, out);
}

absl::Status CudaBackend::RopeSplitQkv(const RopeSplitParams& params) {
  RETURN_IF_ERROR(CheckRopeSplit(params));
  auto* error = static_cast<DeviceError*>(error_device_->data());
  if (fast_.rope_kv_write) return LaunchRopeSplitKvWrite(params, error, stream());
  return LaunchRopeSplit(params, error, stream());
}

absl::Status CudaBackend::SiluMul(Tensor gate_up, Tensor out) {
  RETURN_IF_ERROR(CheckSiluMul(gate_up, out));
  return LaunchSiluMul(gate_up, out, stream());
}

absl::Status CudaBackend::AddRmsNormLinear(Tensor residual, Tensor delta, Tensor norm_weight,
                                           float eps, Tensor normed,
                                           const std::vector<Tensor>& parts, Tensor bias,
                                           Tensor out) {
  if (fast_.gemv_rmsnorm && parts.size() == 1) {
    RETURN_IF_ERROR(delta.empty() ? CheckRmsNorm(residual, norm_weight, normed)
                                  : CheckAddRmsNorm(residual, delta, norm_weight, normed));
    RETURN_IF_ERROR(CheckLinear(normed, parts.front(), bias, out));
    ASSIGN_OR_RETURN(const bool fused,
                     gemm_->RmsNormLinear(residual, delta, norm_weight, eps,
                                          static_cast<int*>(gemv_counter_->data()), normed,
                                          parts.front(), bias, out));
    if (fused) return absl::OkStatus();
  }
  return Backend::AddRmsNormLinear(residual, delta, norm_weight, eps, normed, parts, bias, out);
}

absl::Status CudaBackend::SiluMulLinear(Tensor gate_up, Tensor act, Tensor weight, Tensor bias,
                                        Tensor out) {
  RETURN_IF_ERROR(CheckSiluMul(gate_up, act));
  RETURN_IF_ERROR(CheckLinear(act, weight, bias, out));
  return gemm_->SiluMulLinear(gate_up, act, weight, bias, out, fast_.gemv_silu_mul);
}

absl::Status CudaBackend::GatherRows(Tensor x, Tensor rows, Tensor out) {
  RETURN_IF_ERROR(CheckGatherRows(x, rows, out));
  return LaunchGatherRows(x, rows, out, static_cast<DeviceError*>(error_device_->data()), stream());
}

absl::Status CudaBackend::PrefillAttention(const PrefillAttentionParams& p) {
  RETURN_IF_ERROR(CheckPrefillAttention(p));
  // Refuse an unserved shape before the cache is touched.
  RETURN_IF_ERROR(CheckServedAttentionShape(p.shape.head_dim, p.cache.block_size));
  RETURN_IF_ERROR(
      RequireAligned16("PrefillAttention", {&p.q, &p.k, &p.v, &p.out, &p.cache.k, &p.cache.v}));
  auto* error = static_cast<DeviceError*>(error_device_->data());
  if (!p.kv_written) {
    RETURN_IF_ERROR(LaunchKvCacheWrite(p.k, p.v, p.slot_mapping, p.cache, error, stream()));
  }
  if (fast_.prefill_mma && PrefillMmaServes(p)) {
    // Within what Reserve sized (none before it: no split, as exact).
    const PrefillMmaPlan plan =
        PlanPrefillMma(p, num_sms_, prefill_workspace_floats_, prefill_counters_size_);
    float* workspace =
        plan.num_splits > 1 ? static_cast<float*>(prefill_workspace_->data()) : nullptr;
    int* counters = plan.num_splits > 1 ? static_cast<int*>(prefill_counters_->data()) : nullptr;
    return LaunchPrefillMma(p, plan, workspace, counters, error, stream());
  }
  return LaunchPrefillAttention(p, error, stream());
}

absl::Status CudaBackend::DecodeAttention(const DecodeAttentionParams& p) {
  RETURN_IF_ERROR(CheckDecodeAttention(p));
  RETURN_IF_ERROR(CheckServedAttentionShape(p.shape.head_dim, p.cache.block_size));
  RETURN_IF_ERROR(
      RequireAligned16("DecodeAttention", {&p.q, &p.k, &p.v, &p.out, &p.cache.k, &p.cache.v}));
  auto* error = static_cast<DeviceError*>(error_device_->data());
  if (!p.kv_written) {
    RETURN_IF_ERROR(LaunchKvCacheWrite(p.k, p.v, p.slot_mapping, p.cache, error, stream()));
  }
  if (fast_.flash_decode && FlashDecodeServes(p)) {
    // Within what Reserve sized (none before it: one split, as exact).
    const FlashDecodePlan plan = PlanFlashDecode(p, num_sms_, flash_workspace_floats_,
                                                 flash_counters_size_, flash_ctas_per_sm_);
    float* workspace =
        plan.workspace_floats > 0 ? static_cast<float*>(flash_workspace_->data()) : nullptr;
    int* counters = plan.counters > 0 ? static_cast<int*>(flash_counters_->data()) : nullptr;
    return LaunchFlashDecode(p, plan, workspace, counters, error, stream());
  }
  // Within the workspace Reserve sized: no allocation here, ever.
  const DecodePlan plan = PlanDecodeAttention(p, num_sms_, decode_workspace_floats_);
  if (!decode_cap_logged_ &&
      plan.num_splits < PlanDecodeAttention(p, num_sms_).num_splits) {
    KV_LOG(WARNING) << "DecodeAttention: " << p.num_seqs << " sequences of up to "
                    << p.max_context_len << " tokens exceed the reserved split workspace ("
                    << decode_workspace_floats_ << " floats): fewer splits (slower, as exact)";
    decode_cap_logged_ = true;
  }
  float* workspace =
      plan.workspace_floats > 0 ? static_cast<float*>(decode_workspace_->data()) : nullptr;
  return LaunchDecodeAttention(p, plan, workspace, error, stream());
}

absl::Status CudaBackend::Sample(const SampleParams& params) {
  RETURN_IF_ERROR(CheckSample(params));
  return LaunchSample(params, stream());
}

absl::Status CudaBackend::MaskLogits(const MaskLogitsParams& params) {
  RETURN_IF_ERROR(CheckMaskLogits(params));
  return LaunchMaskLogits(params, stream());
}

}  // namespace kvserve::cuda
