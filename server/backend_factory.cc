#include "server/backend_factory.h"

#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "kernels/cpu/cpu_backend.h"
#if KVSERVE_WITH_CUDA
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/device_info.h"
#include "kernels/cuda/dispatch.h"
#endif

namespace kvserve {
namespace {

#if KVSERVE_WITH_CUDA
// Whether the CUDA kernels serve this model and block size (they are compiled
// for a fixed set of head dims and block sizes, see kernels/cuda/dispatch.h).
absl::Status CheckCudaServes(const ModelConfig& model, const EngineConfig& engine_config) {
  absl::Status s = cuda::CheckServedAttentionShape(model.head_dim, engine_config.block_size);
  if (s.ok()) return s;
  return absl::InvalidArgumentError(absl::StrCat(
      "--device cuda: ", s.message(), "; use --device cpu, or --block_size 16 or 32"));
}

absl::StatusOr<std::unique_ptr<Backend>> MakeCudaBackend(const BackendOptions& options,
                                                         const ModelConfig& model,
                                                         EngineConfig& engine_config) {
  DType dtype = DType::kBFloat16;
  if (options.dtype != "auto") {
    ASSIGN_OR_RETURN(dtype, ParseDType(options.dtype));
  }
  if (!(options.gpu_memory_utilization > 0 && options.gpu_memory_utilization <= 1)) {
    return absl::InvalidArgumentError(absl::StrCat("--gpu_memory_utilization must be in (0, 1], got ",
                                                   options.gpu_memory_utilization));
  }
  RETURN_IF_ERROR(CheckCudaServes(model, engine_config));
  engine_config.gpu_memory_utilization = options.gpu_memory_utilization;
  cuda::CudaBackendOptions cuda_options;
  cuda_options.dtype = dtype;
  cuda_options.graphs = options.cuda_graphs;
  ASSIGN_OR_RETURN(cuda_options.fast_kernels, cuda::FastKernels::Parse(options.cuda_fast_kernels));
  cuda_options.tune_gemms = options.cuda_tune_gemms;
  ASSIGN_OR_RETURN(std::unique_ptr<cuda::CudaBackend> backend, cuda::CudaBackend::Create(cuda_options));
  KV_LOG(INFO) << "CUDA backend on " << backend->device_name() << ", " << DTypeName(dtype)
               << "; KV pool from --gpu_memory_utilization " << options.gpu_memory_utilization;
  return std::unique_ptr<Backend>(std::move(backend));
}
#endif

}  // namespace

absl::StatusOr<std::unique_ptr<Backend>> MakeBackend(const BackendOptions& options,
                                                     const ModelConfig& model,
                                                     EngineConfig& engine_config) {
  if (options.device != "auto" && options.device != "cpu" && options.device != "cuda") {
    return absl::InvalidArgumentError(
        absl::StrCat("--device must be auto, cpu or cuda, got ", options.device));
  }
#if KVSERVE_WITH_CUDA
  if (options.device == "cuda") return MakeCudaBackend(options, model, engine_config);
  if (options.device == "auto" && cuda::DeviceCount() > 0) {
    if (absl::Status s = CheckCudaServes(model, engine_config); !s.ok()) {
      KV_LOG(WARNING) << "--device auto: not using the GPU: " << s.message();
    } else {
      return MakeCudaBackend(options, model, engine_config);
    }
  }
#else
  if (options.device == "cuda") {
    return absl::FailedPreconditionError(
        "--device cuda: this kvserve was built without the CUDA backend (KVSERVE_CUDA=OFF, or no "
        "nvcc at build time)");
  }
#endif
  ASSIGN_OR_RETURN(CpuWeights weights, ParseCpuWeights(options.dtype));
  ASSIGN_OR_RETURN(CpuActivations activations, ParseCpuActivations(options.cpu_activations));
  return std::unique_ptr<Backend>(std::make_unique<CpuBackend>(weights, activations));
}

}  // namespace kvserve
