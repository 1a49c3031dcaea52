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
// A plan (descriptors, layouts and the heuristic's algorithm) is built once
// per shape, dtype and pointer alignment and reused: a decode step runs the
// same few shapes every time, and the heuristic query costs more than a small
// GEMM.
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <map>
#include <memory>
#include <tuple>

#include "absl/status/statusor.h"
#include "kernels/cuda/cuda_resources.h"
#include "kernels/tensor.h"

namespace kvserve::cuda {

class CublasLtGemm {
 public:
  /// `workspace_bytes` of device memory for split-K and friends (32 MiB is
  /// what NVIDIA recommends for Hopper).
  static absl::StatusOr<std::unique_ptr<CublasLtGemm>> Create(cudaStream_t stream,
                                                              size_t workspace_bytes);
  ~CublasLtGemm();
  CublasLtGemm(const CublasLtGemm&) = delete;
  CublasLtGemm& operator=(const CublasLtGemm&) = delete;

  /// x: [M, K], weight: [N, K] of x's dtype, bias: [N] of x's dtype or empty,
  /// out: [M, N] of x's dtype or float32. Shapes are validated by the caller
  /// (CheckLinear). Enqueued on the stream.
  absl::Status Linear(Tensor x, Tensor weight, Tensor bias, Tensor out);

 private:
  struct Plan;
  // rows, N, K, in dtype, out dtype, fused bias, alignments of x, W, out, bias (0: none).
  using Key = std::tuple<int64_t, int64_t, int64_t, int, int, bool, int, int, int, int>;

  explicit CublasLtGemm(cudaStream_t stream);  // defined where Plan is complete
  /// `bias`: the fused bias's pointer, which the heuristic needs (its alignment).
  absl::StatusOr<Plan*> GetPlan(const Key& key, const void* bias);
  absl::StatusOr<std::unique_ptr<Plan>> MakePlan(const Key& key, const void* bias);
  absl::Status GemmEx(Tensor x, Tensor weight, Tensor out);

  cudaStream_t stream_;
  cublasLtHandle_t handle_ = nullptr;
  cublasHandle_t fallback_ = nullptr;  // cublasGemmEx for shapes cuBLASLt declines
  DeviceBufferPtr workspace_;
  std::map<Key, std::unique_ptr<Plan>> plans_;  // null plan: use GemmEx
};

}  // namespace kvserve::cuda
