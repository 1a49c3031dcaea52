// The CUDA backend: every op of the Backend interface on one GPU, enqueued
// on one stream owned by the backend (ops return as soon as the work is
// queued; CopyToHost and Synchronize wait for it).
//
// - Device 0 of the process (CUDA_VISIBLE_DEVICES picks the GPU): the
//   runtime's current device is per thread, and the engine calls the backend
//   from its own thread, where device 0 is current.
// - compute_dtype() (bfloat16 by default, float16 or float32) is the dtype the
//   model's weights, activations and KV cache are allocated in; Upload
//   converts checkpoints to it. The ops themselves accept any of the three
//   (the tensors' dtype decides) with float32 accumulation throughout;
//   Linear may write float32 (the logits).
// - GEMMs go through cuBLASLt (cublaslt_gemm.h); everything else through the
//   kernels of this directory.
// - Shapes are checked on the host by kernels/op_checks.h (the same messages
//   as the CPU backend); data-dependent errors (an id out of range, a bad
//   block table) are found by the kernels and returned by the next
//   CopyToHost or Synchronize (device_error.h).
#pragma once

#include <cuda_runtime.h>

#include <memory>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "kernels/cuda/cublaslt_gemm.h"
#include "kernels/cuda/cuda_resources.h"
#include "kernels/cuda/device_error.h"
#include "kernels/cuda/fast_kernels.h"
#include "kernels/cuda/pinned_staging.h"

namespace kvserve::cuda {

struct CudaBackendOptions {
  DType dtype = DType::kBFloat16;  // float32, bfloat16 or float16
  size_t gemm_workspace_bytes = size_t(32) << 20;
  size_t staging_slot_bytes = size_t(8) << 20;  // two pinned slots of this size
  /// Record each decode bucket's step as a CUDA graph and replay it
  /// (--cuda_graphs, on by default in the server; tests opt in).
  bool graphs = false;
  /// The fast kernels (flash decode, tensor-core prefill, fused RoPE + KV
  /// write, one-pass RMSNorm, small-M GEMV) allowed wherever they serve the
  /// op, each checked against its reference on this GPU by Reserve and
  /// replaced by it if they disagree; FastKernels::None(): the reference
  /// kernels everywhere (docs/cuda.md, --cuda_fast_kernels).
  FastKernels fast_kernels = FastKernels::All();
  /// Reserve times the cuBLASLt candidates of every planned GEMM on this GPU
  /// and keeps the fastest (cublaslt_gemm.h); false: the heuristic's order.
  bool tune_gemms = true;
};

class CudaBackend final : public Backend {
 public:
  /// FailedPrecondition without a usable device; InvalidArgument for a dtype
  /// other than float32 / bfloat16 / float16.
  static absl::StatusOr<std::unique_ptr<CudaBackend>> Create(const CudaBackendOptions& options);
  ~CudaBackend() override;

  std::string name() const override { return "cuda"; }
  DType compute_dtype() const override { return dtype_; }
  absl::StatusOr<DeviceMemoryInfo> MemoryInfo() override;
  /// Refuses an attention shape the kernels do not serve (by name), sizes the
  /// decode split workspace for the largest plan the limits allow, and plans
  /// the GEMMs: after it no op allocates or synchronizes the device.
  absl::Status Reserve(const StepLimits& limits) override;

  absl::StatusOr<DeviceBufferPtr> Allocate(size_t bytes) override;
  absl::Status CopyToDevice(const void* host, size_t bytes, void* device) override;
  absl::Status CopyToHost(const void* device, size_t bytes, void* host) override;
  bool UploadsFromBlockDTypes() const override { return true; }
  absl::Status Upload(const void* host, DType src_dtype, Tensor dst) override;
  absl::Status Synchronize() override;

  /// Graphs, when CudaBackendOptions::graphs: stream capture of the engine's
  /// stream (thread-local mode: only this thread's calls are captured),
  /// instantiated once per bucket, launched on the same stream.
  bool SupportsGraphs() const override { return graphs_enabled_; }
  absl::Status BeginCapture(int bucket) override;
  absl::Status EndCapture(int bucket) override;
  absl::Status Replay(int bucket) override;

  absl::Status Embedding(Tensor ids, Tensor table, Tensor out) override;
  absl::Status RmsNorm(Tensor x, Tensor weight, float eps, Tensor out) override;
  absl::Status AddRmsNorm(Tensor residual, Tensor x, Tensor weight, float eps,
                          Tensor out) override;
  absl::Status Linear(Tensor x, Tensor weight, Tensor bias, Tensor out) override;
  absl::Status RopeSplitQkv(const RopeSplitParams& params) override;
  absl::Status SiluMul(Tensor gate_up, Tensor out) override;
  absl::Status SiluMulLinear(Tensor gate_up, Tensor act, Tensor weight, Tensor bias,
                             Tensor out) override;
  absl::Status AddRmsNormLinear(Tensor residual, Tensor delta, Tensor norm_weight, float eps,
                                Tensor normed, const std::vector<Tensor>& parts, Tensor bias,
                                Tensor out) override;
  absl::Status GatherRows(Tensor x, Tensor rows, Tensor out) override;
  absl::Status PrefillAttention(const PrefillAttentionParams& params) override;
  absl::Status DecodeAttention(const DecodeAttentionParams& params) override;
  absl::Status Sample(const SampleParams& params) override;
  absl::Status MaskLogits(const MaskLogitsParams& params) override;

  cudaStream_t stream() const { return stream_.get(); }
  /// The fast kernels that failed their start-up check (the reference serves
  /// instead), e.g. "flash_decode": empty when all agree.
  std::vector<std::string> KernelFallbacks() const override;
  /// "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs)".
  const std::string& device_name() const { return device_name_; }

 private:
  CudaBackend() = default;
  /// After a synchronization: the first error a kernel reported since the
  /// last check (cleared), or OK.
  absl::Status TakeDeviceError();
  /// Enqueues the copy of the device error word into pinned memory.
  absl::Status EnqueueErrorFetch();
  /// Runs each enabled fast kernel against its reference on inputs shaped
  /// like `limits` (kernel_self_check.h); turns off, logs and records those
  /// that disagree.
  absl::Status SelfCheckFastKernels(const StepLimits& limits);
  /// Records a failed self-check: the reference serves from now on.
  void FallBack(const std::string& kernel, const absl::Status& why);

  DType dtype_ = DType::kBFloat16;
  int num_sms_ = 1;
  std::string device_name_;
  CudaStream stream_;
  std::unique_ptr<PinnedStaging> staging_;
  std::unique_ptr<CublasLtGemm> gemm_;
  DeviceBufferPtr error_device_;  // one DeviceError
  DeviceBufferPtr gemv_counter_;  // one int, zero between launches: the pre-norm GEMV's
  PinnedBuffer error_host_;       // its host mirror
  // The decode split workspace, sized by Reserve (null before): a plan never
  // asks for more than it holds (it takes fewer splits instead).
  DeviceBufferPtr decode_workspace_;
  size_t decode_workspace_floats_ = 0;
  bool decode_cap_logged_ = false;
  // The flash-decode split workspace and merge counters (zeroed), sized by
  // Reserve for every served block size.
  DeviceBufferPtr flash_workspace_;
  size_t flash_workspace_floats_ = 0;
  DeviceBufferPtr flash_counters_;
  size_t flash_counters_size_ = 0;
  // The tensor-core prefill's key-split workspace and merge counters (zeroed).
  DeviceBufferPtr prefill_workspace_;
  size_t prefill_workspace_floats_ = 0;
  DeviceBufferPtr prefill_counters_;
  size_t prefill_counters_size_ = 0;
  // Which fast kernels serve: the option, then the start-up check.
  FastKernels fast_ = FastKernels::None();
  // Resident flash-decode CTAs per SM for the model's shape (its plans fill one wave).
  int flash_ctas_per_sm_ = 4;
  std::vector<std::string> fallbacks_;
  bool graphs_enabled_ = false;
  std::vector<CudaGraphExec> graphs_;  // by bucket; empty until recorded
};

}  // namespace kvserve::cuda
