// Which fast CUDA kernels a backend may use (docs/cuda.md, "Fast kernels and
// their reference"). Each one enabled is still checked against its
// reference on the serving GPU at start-up; disabling one here makes its
// reference serve without a check (--cuda_fast_kernels).
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace kvserve::cuda {

struct FastKernels {
  bool flash_decode = true;   // DecodeAttention (flash_decode.h)
  bool prefill_mma = true;    // PrefillAttention on the tensor cores (prefill_mma.h)
  bool rope_kv_write = true;  // RopeSplitQkv writing the KV cache in one pass (rope_split.h)
  bool rmsnorm = true;        // one-pass RmsNorm / AddRmsNorm (rmsnorm.cuh)
  bool gemv_small_m = true;   // the small-M GEMV competing in GEMM tuning (gemv_small_m.h)
  bool gemv_silu_mul = true;  // its variant taking SiluMul's input (where the GEMV serves down)
  bool gemm_skinny_mma = true;  // the 9-64-row tensor-core kernel competing in GEMM tuning
  bool gemv_rmsnorm = true;   // the GEMV's variant computing the block's pre-norm (where it serves)
  bool pdl = true;            // programmatic dependent launch through the decode chain (pdl.cuh)

  static FastKernels All() { return FastKernels(); }
  static FastKernels None();
  /// "all", "none", or a comma-separated list of the names above (those on,
  /// the others off). InvalidArgument naming an unknown name and the list.
  static absl::StatusOr<FastKernels> Parse(absl::string_view spec);
  /// "flash_decode,prefill_mma,..." of those on, or "none".
  std::string ToString() const;
};

}  // namespace kvserve::cuda
