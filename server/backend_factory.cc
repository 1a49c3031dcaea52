#include "server/backend_factory.h"

#include "absl/strings/str_cat.h"
#include "kernels/base/logging.h"
#include "kernels/cpu/cpu_backend.h"

namespace kvserve {

absl::StatusOr<std::unique_ptr<Backend>> MakeBackend(const BackendOptions& options,
                                                     const ModelConfig& model,
                                                     EngineConfig& engine_config) {
  if (options.device != "auto" && options.device != "cpu" && options.device != "cuda") {
    return absl::InvalidArgumentError(
        absl::StrCat("--device must be auto, cpu or cuda, got ", options.device));
  }
  if (options.device == "cuda") {
    return absl::UnimplementedError("--device cuda: the CUDA backend is not available yet");
  }
  if (options.dtype != "auto" && options.dtype != "float32") {
    KV_LOG(WARNING) << "--dtype " << options.dtype << " ignored: the CPU backend computes in float32";
  }
  return std::unique_ptr<Backend>(std::make_unique<CpuBackend>());
}

}  // namespace kvserve
