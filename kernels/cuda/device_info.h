// Whether a CUDA device is present, without failing when none is.
#pragma once

#include <string>

namespace kvserve::cuda {

/// Number of usable CUDA devices; 0 when there is no driver or no GPU.
int DeviceCount();
/// "NVIDIA H100 80GB HBM3 (sm_90, 79.1 GiB)" for device 0, or why there is none.
std::string DescribeDevice();

}  // namespace kvserve::cuda
