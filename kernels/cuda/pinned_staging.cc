#include "kernels/cuda/pinned_staging.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "kernels/cuda/cuda_check.h"

namespace kvserve::cuda {

absl::StatusOr<std::unique_ptr<PinnedStaging>> PinnedStaging::Create(cudaStream_t stream,
                                                                     size_t slot_bytes,
                                                                     int num_slots) {
  std::unique_ptr<PinnedStaging> s(new PinnedStaging(stream, slot_bytes));
  for (int i = 0; i < num_slots; ++i) {
    ASSIGN_OR_RETURN(PinnedBuffer buffer, PinnedBuffer::Allocate(slot_bytes));
    ASSIGN_OR_RETURN(CudaEvent event, CudaEvent::Create());
    // Recorded once so that the first Acquire of each slot does not wait on nothing.
    RETURN_IF_CUDA_ERROR(cudaEventRecord(event.get(), stream));
    s->slots_.push_back(std::move(buffer));
    s->done_.push_back(std::move(event));
  }
  return s;
}

absl::StatusOr<PinnedStaging::Slot> PinnedStaging::Acquire() {
  const int i = next_;
  next_ = (next_ + 1) % static_cast<int>(slots_.size());
  // The slot's previous DMA must have read it before the host overwrites it.
  RETURN_IF_CUDA_ERROR(cudaEventSynchronize(done_[i].get()));
  return Slot{static_cast<char*>(slots_[i].data()), i};
}

absl::Status PinnedStaging::Release(const Slot& slot) {
  RETURN_IF_CUDA_ERROR(cudaEventRecord(done_[slot.index].get(), stream_));
  return absl::OkStatus();
}

absl::Status PinnedStaging::ToDevice(const void* host, size_t bytes, void* device) {
  const char* src = static_cast<const char*>(host);
  char* dst = static_cast<char*>(device);
  for (size_t done = 0; done < bytes;) {
    const size_t n = std::min(slot_bytes_, bytes - done);
    ASSIGN_OR_RETURN(Slot slot, Acquire());
    std::memcpy(slot.data, src + done, n);
    RETURN_IF_CUDA_ERROR(
        cudaMemcpyAsync(dst + done, slot.data, n, cudaMemcpyHostToDevice, stream_));
    RETURN_IF_ERROR(Release(slot));
    done += n;
  }
  return absl::OkStatus();
}

absl::Status PinnedStaging::UploadConverted(const void* host, DType src_dtype, int64_t count,
                                            DType dst_dtype, void* device) {
  if (src_dtype == DType::kInt32 || dst_dtype == DType::kInt32) {
    return absl::InvalidArgumentError(absl::StrCat("Upload converts float types only, not ",
                                                   DTypeName(src_dtype), " to ",
                                                   DTypeName(dst_dtype)));
  }
  const size_t dst_size = DTypeSize(dst_dtype);
  if (src_dtype == dst_dtype) return ToDevice(host, DTypeBytes(src_dtype, count), device);
  if (IsBlockDType(dst_dtype)) {
    return absl::InvalidArgumentError(
        absl::StrCat("Upload writes float types only, not ", DTypeName(dst_dtype)));
  }
  // Chunks of whole blocks for a GGUF block format (dequantized here, a slot
  // at a time: never a float32 copy of the whole tensor on the host).
  const int64_t block = DTypeBlockElems(src_dtype);
  const size_t src_size = IsBlockDType(src_dtype) ? 4 : DTypeSize(src_dtype);  // ≥ bytes per element
  const int64_t chunk =
      static_cast<int64_t>(slot_bytes_ / std::max(src_size, dst_size)) / block * block;
  const char* src = static_cast<const char*>(host);
  char* dst = static_cast<char*>(device);
  for (int64_t done = 0; done < count;) {
    const int64_t n = std::min(chunk, count - done);
    ASSIGN_OR_RETURN(Slot slot, Acquire());
    const void* in = src + DTypeBytes(src_dtype, done);
    if (src_dtype == DType::kFloat32) {
      RETURN_IF_ERROR(ConvertFromFloat32(static_cast<const float*>(in), n, dst_dtype, slot.data));
    } else if (dst_dtype == DType::kFloat32) {
      RETURN_IF_ERROR(ConvertToFloat32(in, src_dtype, n, reinterpret_cast<float*>(slot.data)));
    } else {  // float16 ↔ bfloat16, or a block format, through float32 (exact for all)
      scratch_.resize(static_cast<size_t>(n));
      RETURN_IF_ERROR(ConvertToFloat32(in, src_dtype, n, scratch_.data()));
      RETURN_IF_ERROR(ConvertFromFloat32(scratch_.data(), n, dst_dtype, slot.data));
    }
    RETURN_IF_CUDA_ERROR(cudaMemcpyAsync(dst + done * dst_size, slot.data,
                                         static_cast<size_t>(n) * dst_size,
                                         cudaMemcpyHostToDevice, stream_));
    RETURN_IF_ERROR(Release(slot));
    done += n;
  }
  return absl::OkStatus();
}

}  // namespace kvserve::cuda
