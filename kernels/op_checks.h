// Shape and dtype validation shared by every backend, so that a CPU and a
// CUDA op reject exactly the same inputs with the same message.
#pragma once

#include "absl/status/status.h"
#include "kernels/op_params.h"
#include "kernels/tensor.h"

namespace kvserve {

/// The weight dtypes a backend's Linear and Embedding take: its compute dtype
/// only (CUDA), or also bfloat16 and Q8_0 weights with float32 activations
/// (the CPU backend, which converts them in registers).
enum class WeightDTypes { kComputeOnly, kAlsoBf16AndBlocks };

absl::Status CheckEmbedding(Tensor ids, Tensor table, Tensor out,
                            WeightDTypes accepted = WeightDTypes::kComputeOnly);
absl::Status CheckRmsNorm(Tensor x, Tensor weight, Tensor out);
absl::Status CheckAddRmsNorm(Tensor residual, Tensor x, Tensor weight, Tensor out);
absl::Status CheckLinear(Tensor x, Tensor weight, Tensor bias, Tensor out,
                         WeightDTypes accepted = WeightDTypes::kComputeOnly);
absl::Status CheckRopeSplit(const RopeSplitParams& p);
absl::Status CheckSiluMul(Tensor gate_up, Tensor out);
absl::Status CheckGatherRows(Tensor x, Tensor rows, Tensor out);
absl::Status CheckPrefillAttention(const PrefillAttentionParams& p);
absl::Status CheckDecodeAttention(const DecodeAttentionParams& p);
absl::Status CheckSample(const SampleParams& p);
absl::Status CheckMaskLogits(const MaskLogitsParams& p);

}  // namespace kvserve
