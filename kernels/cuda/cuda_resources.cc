#include "kernels/cuda/cuda_resources.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "kernels/cuda/cuda_check.h"

namespace kvserve::cuda {
namespace {

// Freeing errors cannot be returned; they are logged and the handle dropped.
void LogIfError(cudaError_t err, const char* what) {
  if (err != cudaSuccess) {
    KV_LOG(ERROR) << what << ": " << cudaGetErrorName(err) << ": " << cudaGetErrorString(err);
  }
}

}  // namespace

absl::StatusOr<DeviceBufferPtr> CudaBuffer::Allocate(size_t bytes) {
  // Never a null pointer: an empty Tensor is one whose data is null.
  const size_t rounded = bytes == 0 ? 256 : bytes;
  void* data = nullptr;
  const cudaError_t err = cudaMalloc(&data, rounded);
  if (err == cudaErrorMemoryAllocation) {
    cudaGetLastError();  // not sticky; clear it so later launch checks do not see it
    size_t free_bytes = 0, total_bytes = 0;
    cudaMemGetInfo(&free_bytes, &total_bytes);
    return absl::ResourceExhaustedError(absl::StrCat(
        "cudaMalloc of ", bytes, " bytes failed: ", free_bytes >> 20, " MiB free of ",
        total_bytes >> 20, " MiB"));
  }
  RETURN_IF_CUDA_ERROR(err);
  return DeviceBufferPtr(new CudaBuffer(data, bytes));
}

CudaBuffer::~CudaBuffer() { LogIfError(cudaFree(data()), "cudaFree"); }

absl::StatusOr<PinnedBuffer> PinnedBuffer::Allocate(size_t bytes) {
  PinnedBuffer b;
  RETURN_IF_CUDA_ERROR(cudaMallocHost(&b.data_, bytes == 0 ? 64 : bytes));
  b.size_ = bytes;
  return b;
}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) LogIfError(cudaFreeHost(data_), "cudaFreeHost");
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

PinnedBuffer::~PinnedBuffer() {
  if (data_ != nullptr) LogIfError(cudaFreeHost(data_), "cudaFreeHost");
}

absl::StatusOr<CudaStream> CudaStream::Create() {
  CudaStream s;
  RETURN_IF_CUDA_ERROR(cudaStreamCreateWithFlags(&s.stream_, cudaStreamNonBlocking));
  return s;
}

CudaStream& CudaStream::operator=(CudaStream&& other) noexcept {
  if (this != &other) {
    if (stream_ != nullptr) LogIfError(cudaStreamDestroy(stream_), "cudaStreamDestroy");
    stream_ = std::exchange(other.stream_, nullptr);
  }
  return *this;
}

CudaStream::~CudaStream() {
  if (stream_ != nullptr) LogIfError(cudaStreamDestroy(stream_), "cudaStreamDestroy");
}

absl::StatusOr<CudaEvent> CudaEvent::Create() {
  CudaEvent e;
  RETURN_IF_CUDA_ERROR(cudaEventCreateWithFlags(&e.event_, cudaEventDisableTiming));
  return e;
}

absl::StatusOr<CudaEvent> CudaEvent::CreateTimed() {
  CudaEvent e;
  RETURN_IF_CUDA_ERROR(cudaEventCreateWithFlags(&e.event_, cudaEventDefault));
  return e;
}

CudaEvent& CudaEvent::operator=(CudaEvent&& other) noexcept {
  if (this != &other) {
    if (event_ != nullptr) LogIfError(cudaEventDestroy(event_), "cudaEventDestroy");
    event_ = std::exchange(other.event_, nullptr);
  }
  return *this;
}

CudaEvent::~CudaEvent() {
  if (event_ != nullptr) LogIfError(cudaEventDestroy(event_), "cudaEventDestroy");
}

absl::StatusOr<CudaGraphExec> CudaGraphExec::Instantiate(cudaGraph_t graph) {
  CudaGraphExec e;
  RETURN_IF_CUDA_ERROR(cudaGraphInstantiate(&e.exec_, graph, 0));
  return e;
}

CudaGraphExec& CudaGraphExec::operator=(CudaGraphExec&& other) noexcept {
  if (this != &other) {
    if (exec_ != nullptr) LogIfError(cudaGraphExecDestroy(exec_), "cudaGraphExecDestroy");
    exec_ = std::exchange(other.exec_, nullptr);
  }
  return *this;
}

CudaGraphExec::~CudaGraphExec() {
  if (exec_ != nullptr) LogIfError(cudaGraphExecDestroy(exec_), "cudaGraphExecDestroy");
}

}  // namespace kvserve::cuda
