// float32 CPU implementations of the backend ops. Inputs are already
// validated by kernels/op_checks.h; these only compute.
#pragma once

#include <vector>

#include "absl/status/status.h"
#include "kernels/op_params.h"
#include "kernels/tensor.h"

namespace kvserve::cpu {

absl::Status Embedding(Tensor ids, Tensor table, Tensor out);
void RmsNorm(Tensor x, Tensor weight, float eps, Tensor out);
void AddRmsNorm(Tensor residual, Tensor x, Tensor weight, float eps, Tensor out);
/// out = x · [parts stacked by rows]ᵀ (+ bias); when `quantize_activations`,
/// block-format parts multiply int8-rounded activations and bfloat16 parts
/// bf16-rounded ones (on AVX512_BF16); otherwise Q8_0 and bfloat16 keep
/// float32 activations (the other block formats always round them).
void Linear(Tensor x, const std::vector<Tensor>& parts, Tensor bias, Tensor out,
            bool quantize_activations);
absl::Status RopeSplitQkv(const RopeSplitParams& p);
void SiluMul(Tensor gate_up, Tensor out);
absl::Status GatherRows(Tensor x, Tensor rows, Tensor out);
/// Copies each token's k and v rows into the paged cache at slot_mapping
/// (kPadSlot: skipped); OutOfRange for any other slot outside the cache.
absl::Status WriteKvCache(Tensor k, Tensor v, Tensor slot_mapping, const PagedKvCache& cache);
absl::Status PrefillAttention(const PrefillAttentionParams& p);
absl::Status DecodeAttention(const DecodeAttentionParams& p);
void Sample(const SampleParams& p);
void MaskLogits(const MaskLogitsParams& p);

}  // namespace kvserve::cpu
