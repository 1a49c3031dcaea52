// Shape and dtype validation shared by every backend, so that a CPU and a
// CUDA op reject exactly the same inputs with the same message.
#pragma once

#include "absl/status/status.h"
#include "kernels/op_params.h"
#include "kernels/tensor.h"

namespace kvserve {

absl::Status CheckEmbedding(Tensor ids, Tensor table, Tensor out);
absl::Status CheckRmsNorm(Tensor x, Tensor weight, Tensor out);
absl::Status CheckAddRmsNorm(Tensor residual, Tensor x, Tensor weight, Tensor out);
absl::Status CheckLinear(Tensor x, Tensor weight, Tensor bias, Tensor out);
absl::Status CheckRopeSplit(const RopeSplitParams& p);
absl::Status CheckSiluMul(Tensor gate_up, Tensor out);
absl::Status CheckGatherRows(Tensor x, Tensor rows, Tensor out);
absl::Status CheckPrefillAttention(const PrefillAttentionParams& p);
absl::Status CheckDecodeAttention(const DecodeAttentionParams& p);
absl::Status CheckSample(const SampleParams& p);

}  // namespace kvserve
