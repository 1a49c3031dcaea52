// RAII owners of CUDA resources: device memory, page-locked host memory,
// streams and events. Each frees its resource exactly once, in its
// destructor; errors while freeing are logged (a destructor cannot return).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <memory>

#include "absl/status/statusor.h"
#include "kernels/device_buffer.h"

namespace kvserve::cuda {

/// cudaMalloc'd memory behind the DeviceBuffer interface.
class CudaBuffer final : public DeviceBuffer {
 public:
  /// ResourceExhausted (with the free memory) when the device is full.
  static absl::StatusOr<DeviceBufferPtr> Allocate(size_t bytes);
  ~CudaBuffer() override;

 private:
  CudaBuffer(void* data, size_t size) : DeviceBuffer(data, size) {}
};

/// cudaMallocHost'd (page-locked) host memory: the source or target of
/// asynchronous copies.
class PinnedBuffer {
 public:
  static absl::StatusOr<PinnedBuffer> Allocate(size_t bytes);
  PinnedBuffer() = default;
  PinnedBuffer(PinnedBuffer&& other) noexcept { *this = std::move(other); }
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  ~PinnedBuffer();

  void* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

class CudaStream {
 public:
  /// A non-blocking stream: it does not synchronize with the legacy default stream.
  static absl::StatusOr<CudaStream> Create();
  CudaStream() = default;
  CudaStream(CudaStream&& other) noexcept { *this = std::move(other); }
  CudaStream& operator=(CudaStream&& other) noexcept;
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;
  ~CudaStream();

  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

class CudaEvent {
 public:
  /// Timing disabled: these events only order work.
  static absl::StatusOr<CudaEvent> Create();
  /// Timing enabled (cudaEventElapsedTime), for start-up measurements.
  static absl::StatusOr<CudaEvent> CreateTimed();
  CudaEvent() = default;
  CudaEvent(CudaEvent&& other) noexcept { *this = std::move(other); }
  CudaEvent& operator=(CudaEvent&& other) noexcept;
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;
  ~CudaEvent();

  cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

/// An instantiated CUDA graph (cudaGraphExec_t), destroyed with its owner.
class CudaGraphExec {
 public:
  /// Instantiates `graph` (which the caller still owns and destroys).
  static absl::StatusOr<CudaGraphExec> Instantiate(cudaGraph_t graph);
  CudaGraphExec() = default;
  CudaGraphExec(CudaGraphExec&& other) noexcept { *this = std::move(other); }
  CudaGraphExec& operator=(CudaGraphExec&& other) noexcept;
  CudaGraphExec(const CudaGraphExec&) = delete;
  CudaGraphExec& operator=(const CudaGraphExec&) = delete;
  ~CudaGraphExec();

  cudaGraphExec_t get() const { return exec_; }

 private:
  cudaGraphExec_t exec_ = nullptr;
};

}  // namespace kvserve::cuda
