// Row-wise ops on the GPU: embedding lookup, row gather, SiLU·mul, bias add.
// Shapes are validated by kernels/op_checks.h before these are called; ids
// and rows out of range are reported through the DeviceError word (see
// device_error.h) and their output rows are zero-filled.
#pragma once

#include <cuda_runtime.h>

#include "absl/status/status.h"
#include "kernels/cuda/device_error.h"
#include "kernels/tensor.h"

namespace kvserve::cuda {

/// out[t] = table[ids[t]]. ids: [T] int32, table: [V, hidden], out: [T, hidden].
absl::Status LaunchEmbedding(Tensor ids, Tensor table, Tensor out, DeviceError* error,
                             cudaStream_t stream);
/// out[i] = x[rows[i]]. rows: [S] int32, x: [R, C], out: [S, C]; any dtype.
absl::Status LaunchGatherRows(Tensor x, Tensor rows, Tensor out, DeviceError* error,
                              cudaStream_t stream);
/// out = silu(gate) * up; gate_up: [T, 2I] (gate | up), out: [T, I].
absl::Status LaunchSiluMul(Tensor gate_up, Tensor out, cudaStream_t stream);
/// FailedPrecondition when this build has no kernel image for the current
/// device (built for sm_90a, run elsewhere), naming both.
absl::Status CheckKernelImage();
/// out[m, n] += bias[n]; out: [M, N] of bias's dtype or float32, bias: [N].
absl::Status LaunchAddBias(Tensor bias, Tensor out, cudaStream_t stream);
/// Occupies the stream for about `microseconds` (one thread reading the
/// global timer): timing code enqueues it first, so that the launches it
/// times queue up behind it and the GPU's time is measured, not the host's.
absl::Status LaunchSpin(double microseconds, cudaStream_t stream);

}  // namespace kvserve::cuda
