// Errors found by kernels (an id out of range, a bad block table) that the CPU
// backend reports from the op itself. A kernel cannot return a Status, and
// checking after every launch would stall the stream, so kernels record the
// first error in one device word and skip the bad element (never reading or
// writing out of bounds); the backend reads the word at its next
// synchronization point (CopyToHost, Synchronize) and returns it there, with
// the CPU backend's message. The step that hit it fails as a whole.
#pragma once

#include <cstdint>

#include "absl/status/status.h"

namespace kvserve::cuda {

enum class DeviceErrorCode : int32_t {
  kNone = 0,
  kTokenId = 1,         // a: id, b: vocabulary size
  kGatherRow = 2,       // a: row, b: rows
  kRopePosition = 3,    // a: position, b: table rows
  kKvSlot = 4,          // a: slot, b: slots in the cache
  kBlockId = 5,         // a: block id, b: blocks in the cache
  kBlockTable = 6,      // a: context, b: block-table width, c: block size
  kPrefillQueries = 7,  // a: sequence, b: queries, c: context
  kLaunchBound = 8,     // a: sequence, b: the value, c: the launch bound it exceeds
};

/// The device word. Only the first error is kept (later ones are usually its
/// consequences).
struct DeviceError {
  int32_t code;
  int32_t op;  // which launch bound (kLaunchBound): 0 prefill queries, 1 decode context
  int64_t a, b, c;
};

#ifdef __CUDACC__
__device__ __forceinline__ void ReportDeviceError(DeviceError* e, DeviceErrorCode code, int64_t a,
                                                  int64_t b, int64_t c = 0, int32_t op = 0) {
  if (atomicCAS(reinterpret_cast<int*>(&e->code), 0, static_cast<int>(code)) == 0) {
    e->op = op;
    e->a = a;
    e->b = b;
    e->c = c;
  }
}
#endif

/// OK for kNone; otherwise OutOfRange with the message the CPU backend gives.
absl::Status DeviceErrorStatus(const DeviceError& e);

}  // namespace kvserve::cuda
