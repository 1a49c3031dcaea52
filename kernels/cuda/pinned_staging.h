// Host↔device copies through a small ring of page-locked slots.
//
// Why: Backend::CopyToDevice may be given a host vector that dies right after
// the call (the RoPE table, a step's metadata). A cudaMemcpyAsync from that
// memory could read it after it is gone. So every upload is first copied
// into a pinned slot on the host, and the asynchronous DMA reads the slot; a
// slot is reused only after the event recorded behind its last copy has
// fired. Two slots let the host fill one while the other is in flight.
// Weight uploads convert to the device dtype on the host, chunk by chunk,
// straight into the slots (bounded memory: no full-size host copy).
#pragma once

#include <cuda_runtime.h>

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/cuda/cuda_resources.h"
#include "kernels/dtype.h"

namespace kvserve::cuda {

class PinnedStaging {
 public:
  static absl::StatusOr<std::unique_ptr<PinnedStaging>> Create(cudaStream_t stream,
                                                               size_t slot_bytes, int num_slots);

  /// Enqueues host → device; `host` may be reused or freed on return.
  absl::Status ToDevice(const void* host, size_t bytes, void* device);
  /// Enqueues `count` elements of `src_dtype` at `host`, converted to
  /// `dst_dtype`, into `device`; `host` may be reused or freed on return. A
  /// GGUF block format (`count` whole blocks) is dequantized a slot at a time.
  absl::Status UploadConverted(const void* host, DType src_dtype, int64_t count, DType dst_dtype,
                               void* device);

  /// A slot for a device → host copy of at most slot_bytes(): the caller
  /// enqueues the copy into `data`, synchronizes, reads, then calls Release.
  struct Slot {
    char* data;
    int index;
  };
  absl::StatusOr<Slot> Acquire();
  /// Marks the slot busy until the work enqueued so far has run.
  absl::Status Release(const Slot& slot);

  size_t slot_bytes() const { return slot_bytes_; }

 private:
  PinnedStaging(cudaStream_t stream, size_t slot_bytes) : stream_(stream), slot_bytes_(slot_bytes) {}

  cudaStream_t stream_;
  size_t slot_bytes_;
  int next_ = 0;
  std::vector<PinnedBuffer> slots_;
  std::vector<CudaEvent> done_;  // recorded after each slot's last copy
  std::vector<float> scratch_;   // float32 intermediate for f16 ↔ bf16 uploads
};

}  // namespace kvserve::cuda
