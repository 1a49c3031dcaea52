// A backend that does no math, for measuring the engine's host overhead:
// every op validates its shapes with the same checks as the real backends
// (so a malformed step still fails), then writes nothing; Sample writes a
// fixed token and zero log-probabilities. Memory is real host memory, so the
// runner's metadata copies cost what they cost on the CPU backend.
#pragma once

#include <cstdint>

#include "kernels/backend.h"
#include "kernels/op_checks.h"

namespace kvserve::bench {

class NullBackend final : public Backend {
 public:
  /// `token`: what every Sample row returns.
  explicit NullBackend(int32_t token) : token_(token) {}
  std::string name() const override { return "null"; }
  DType compute_dtype() const override { return DType::kFloat32; }

  absl::StatusOr<DeviceBufferPtr> Allocate(size_t bytes) override;
  absl::Status CopyToDevice(const void* host, size_t bytes, void* device) override;
  absl::Status CopyToHost(const void* device, size_t bytes, void* host) override;
  /// Weights are not copied: their values never matter here.
  absl::Status Upload(const void* host, DType src_dtype, Tensor dst) override;
  absl::Status Synchronize() override { return absl::OkStatus(); }

  absl::Status Embedding(Tensor ids, Tensor table, Tensor out) override;
  absl::Status RmsNorm(Tensor x, Tensor weight, float eps, Tensor out) override;
  absl::Status AddRmsNorm(Tensor residual, Tensor x, Tensor weight, float eps,
                          Tensor out) override;
  absl::Status Linear(Tensor x, Tensor weight, Tensor bias, Tensor out) override;
  absl::Status RopeSplitQkv(const RopeSplitParams& params) override;
  absl::Status SiluMul(Tensor gate_up, Tensor out) override;
  absl::Status GatherRows(Tensor x, Tensor rows, Tensor out) override;
  absl::Status PrefillAttention(const PrefillAttentionParams& params) override;
  absl::Status DecodeAttention(const DecodeAttentionParams& params) override;
  absl::Status Sample(const SampleParams& params) override;
  absl::Status MaskLogits(const MaskLogitsParams& params) override { return CheckMaskLogits(params); }

 private:
  int32_t token_;
};

}  // namespace kvserve::bench
