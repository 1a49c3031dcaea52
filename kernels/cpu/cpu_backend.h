// The CPU backend: float32 activations, KV and accumulation; weight matrices
// in float32, bfloat16 or a GGUF block format (CpuWeights), multiplied with
// int8-rounded activations for the block formats (CpuActivations); GEMMs
// through the quantized product, the small-M kernel and OpenBLAS. It is the
// reference every other backend is tested against, and what CI runs.
#pragma once

#include "kernels/backend.h"

namespace kvserve {

/// How the CPU backend stores weight matrices (--dtype on the CPU).
enum class CpuWeights {
  kFloat32,   // everything converted to float32 (exactness tests; float32 checkpoints)
  kBFloat16,  // every matrix rounded to bfloat16
  kAsStored,  // bfloat16 and block-format matrices kept as stored (see CpuActivations), others float32
};

/// How the CPU backend multiplies by block-format weights (--cpu_activations).
enum class CpuActivations {
  kQuantized,  // "auto": every block format kept, x rounded to int8 blocks as llama.cpp does
  kFloat32,    // "float32": the exact path: Q8_0 kept and multiplied by float32 x,
               // the other block formats dequantized to float32 at load
};

/// "auto" → kQuantized, "float32" → kFloat32; errors name --cpu_activations.
absl::StatusOr<CpuActivations> ParseCpuActivations(absl::string_view activations);

/// "float32" → kFloat32, "bfloat16" → kBFloat16, "auto" → kAsStored; errors name --dtype.
absl::StatusOr<CpuWeights> ParseCpuWeights(absl::string_view dtype);

class CpuBackend final : public Backend {
 public:
  /// Makes OpenBLAS single-threaded: the backend parallelizes its own loops
  /// (GEMM column slices, attention heads) over one thread pool.
  explicit CpuBackend(CpuWeights weights = CpuWeights::kFloat32,
                      CpuActivations activations = CpuActivations::kQuantized);
  std::string name() const override { return "cpu"; }
  DType compute_dtype() const override { return DType::kFloat32; }
  DType MatrixWeightDType(DType stored) const override;
  bool BorrowsHostWeights() const override { return true; }

  absl::StatusOr<DeviceBufferPtr> Allocate(size_t bytes) override;
  absl::Status CopyToDevice(const void* host, size_t bytes, void* device) override;
  absl::Status CopyToHost(const void* device, size_t bytes, void* host) override;
  absl::Status Upload(const void* host, DType src_dtype, Tensor dst) override;
  absl::Status Synchronize() override { return absl::OkStatus(); }

  absl::Status Embedding(Tensor ids, Tensor table, Tensor out) override;
  absl::Status RmsNorm(Tensor x, Tensor weight, float eps, Tensor out) override;
  absl::Status AddRmsNorm(Tensor residual, Tensor x, Tensor weight, float eps,
                          Tensor out) override;
  absl::Status Linear(Tensor x, Tensor weight, Tensor bias, Tensor out) override;
  absl::Status LinearParts(Tensor x, const std::vector<Tensor>& parts, Tensor bias,
                           Tensor out) override;
  absl::Status RopeSplitQkv(const RopeSplitParams& params) override;
  absl::Status SiluMul(Tensor gate_up, Tensor out) override;
  absl::Status GatherRows(Tensor x, Tensor rows, Tensor out) override;
  absl::Status PrefillAttention(const PrefillAttentionParams& params) override;
  absl::Status DecodeAttention(const DecodeAttentionParams& params) override;
  absl::Status Sample(const SampleParams& params) override;
  absl::Status MaskLogits(const MaskLogitsParams& params) override;

 private:
  CpuWeights weights_;
  CpuActivations activations_;
};

}  // namespace kvserve
