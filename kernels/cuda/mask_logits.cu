// Structured outputs' token masks on the GPU (MaskLogitsParams): one thread
// per logit, a grid row per masked row. The mask is 1 bit per token, so a
// 128k vocabulary reads 16 KB per row: noise next to the sampler.
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/sample.h"

namespace kvserve::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void MaskLogitsKernel(float* logits, const int32_t* rows, const uint32_t* masks,
                                 int64_t vocab, int64_t words) {
  const int64_t v = int64_t(blockIdx.x) * kThreads + threadIdx.x;
  if (v >= vocab) return;
  const int m = blockIdx.y;
  const uint32_t word = masks[m * words + (v >> 5)];
  if (((word >> (v & 31)) & 1u) == 0) logits[int64_t(rows[m]) * vocab + v] = -INFINITY;
}

}  // namespace

absl::Status LaunchMaskLogits(const MaskLogitsParams& p, cudaStream_t stream) {
  const int64_t rows = p.rows.dim(0);
  if (rows == 0) return absl::OkStatus();
  const int64_t vocab = p.logits.dim(1);
  const dim3 grid(static_cast<unsigned>((vocab + kThreads - 1) / kThreads),
                  static_cast<unsigned>(rows));
  MaskLogitsKernel<<<grid, kThreads, 0, stream>>>(
      p.logits.as<float>(), p.rows.as<int32_t>(),
      reinterpret_cast<const uint32_t*>(p.masks.as<int32_t>()), vocab, p.masks.dim(1));
  RETURN_IF_LAUNCH_ERROR();
  return absl::OkStatus();
}

}  // namespace kvserve::cuda
