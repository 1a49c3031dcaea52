// Shared by the CUDA benchmarks: the ceilings they print their numbers
// against, measured in the same run on the same GPU.
#pragma once

namespace kvserve::bench {

/// Median device-to-device copy bandwidth (bytes read + written per second)
/// over 1 GiB buffers; 0 when the buffers cannot be allocated.
double MeasureCopyBandwidth();

}  // namespace kvserve::bench
