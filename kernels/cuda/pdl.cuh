// Programmatic dependent launch (Hopper, sm_90+): a kernel launched with
// LaunchDependent may start while the kernel before it in the stream is
// still finishing, once every CTA of that kernel has called
// AllowDependents (or exited). It must call WaitForPrimary before it reads
// anything the earlier kernels write and before it writes anything at all:
// the wait returns when the whole previous grid has completed and its
// memory is visible. What it may do before the wait is read memory that no
// kernel of the step writes (weights), so that a memory-bound kernel's
// first loads overlap the previous kernel's tail and the launch latency
// between them (~1-2 µs per launch at decode, where a step is ~130 launches).
//
// On older GPUs, and when the launch was an ordinary one, both calls are
// no-ops: the stream already orders the kernels.
#pragma once

#include <cuda_runtime.h>

#include <utility>

#include "kernels/cuda/pdl.h"

namespace kvserve::cuda {

/// Waits until the previous kernel in the stream has completed and its
/// writes are visible (no-op unless launched by LaunchDependent on sm_90+).
__device__ __forceinline__ void WaitForPrimary() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

/// Lets a dependent kernel queued behind this one start launching its CTAs
/// (it still waits for this grid's completion before using its results).
__device__ __forceinline__ void AllowDependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" :::);
#endif
}

/// Launches `kernel` so that it may overlap the previous kernel's tail
/// (it must call WaitForPrimary as above), while ProgrammaticLaunchEnabled()
/// (CudaBackend::Create turns it off below sm_90). Where the driver still
/// says the attribute is not supported, the switch goes off for the process
/// and the kernel is launched the ordinary way.
template <typename... Params, typename... Args>
cudaError_t LaunchDependent(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem,
                            cudaStream_t stream, Args&&... args) {
  cudaLaunchAttribute attribute[1];
  attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  config.attrs = attribute;
  config.numAttrs = ProgrammaticLaunchEnabled() ? 1 : 0;
  cudaError_t err = cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
  if (config.numAttrs > 0 && err == cudaErrorNotSupported) {
    cudaGetLastError();  // not sticky: clear it and launch without the attribute
    SetProgrammaticLaunch(false);
    config.numAttrs = 0;
    err = cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
  }
  return err;
}

}  // namespace kvserve::cuda
