// Whether LaunchDependent (pdl.cuh) asks for programmatic dependent launch:
// one process-wide switch, set by CudaBackend::Create from the fast kernel
// "pdl" (--cuda_fast_kernels), so that the overlap can be measured and turned
// off without a rebuild. Off, every kernel waits for the previous one as
// an ordinary launch does (griddepcontrol.wait is then a no-op). The last
// backend created decides, for every backend of the process.
#pragma once

namespace kvserve::cuda {

void SetProgrammaticLaunch(bool on);
bool ProgrammaticLaunchEnabled();

}  // namespace kvserve::cuda
