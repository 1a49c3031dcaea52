#include "kernels/cpu/cpu_backend.h"

#include <cblas.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/op_checks.h"

namespace kvserve {
namespace {

class HostBuffer final : public DeviceBuffer {
 public:
  HostBuffer(void* data, size_t size) : DeviceBuffer(data, size) {}
  ~HostBuffer() override { std::free(data()); }
};

absl::Status RequireFloat32(absl::string_view op, std::initializer_list<const Tensor*> tensors) {
  for (const Tensor* t : tensors) {
    if (!t->empty() && t->dtype != DType::kFloat32) {
      return absl::UnimplementedError(
          absl::StrCat(op, ": the CPU backend computes in float32 only, got ", t->DebugString()));
    }
  }
  return absl::OkStatus();
}

// Converts `count` elements to bfloat16 or Q8_0 through float32, a chunk at a
// time so that a large embedding never needs a float32 copy of itself.
absl::Status ConvertThroughFloat32(const void* src, DType src_dtype, int64_t count, DType dst_dtype,
                                   void* dst) {
  constexpr int64_t kChunk = 1 << 16;  // a multiple of Q8_0's 32
  std::vector<float> chunk(std::min(count, kChunk));
  for (int64_t done = 0; done < count; done += kChunk) {
    const int64_t n = std::min(kChunk, count - done);
    RETURN_IF_ERROR(ConvertToFloat32(static_cast<const char*>(src) + DTypeBytes(src_dtype, done),
                                     src_dtype, n, chunk.data()));
    RETURN_IF_ERROR(ConvertFromFloat32(chunk.data(), n, dst_dtype,
                                       static_cast<char*>(dst) + DTypeBytes(dst_dtype, done)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<CpuWeights> ParseCpuWeights(absl::string_view dtype) {
  if (dtype == "auto") return CpuWeights::kAsStored;
  if (dtype == "float32" || dtype == "fp32") return CpuWeights::kFloat32;
  if (dtype == "bfloat16" || dtype == "bf16") return CpuWeights::kBFloat16;
  return absl::InvalidArgumentError(absl::StrCat(
      "--dtype on the CPU must be auto, float32 or bfloat16, got \"", dtype, "\""));
}

absl::StatusOr<CpuActivations> ParseCpuActivations(absl::string_view activations) {
  if (activations == "auto") return CpuActivations::kQuantized;
  if (activations == "float32" || activations == "fp32") return CpuActivations::kFloat32;
  return absl::InvalidArgumentError(absl::StrCat(
      "--cpu_activations must be auto or float32, got \"", activations, "\""));
}

CpuBackend::CpuBackend(CpuWeights weights, CpuActivations activations)
    : weights_(weights), activations_(activations) {
  openblas_set_num_threads(1);
}

DType CpuBackend::MatrixWeightDType(DType stored) const {
  switch (weights_) {
    case CpuWeights::kFloat32: return DType::kFloat32;
    case CpuWeights::kBFloat16: return DType::kBFloat16;
    case CpuWeights::kAsStored:
      if (stored == DType::kBFloat16 || stored == DType::kQ8_0) return stored;
      if (IsBlockDType(stored) && activations_ == CpuActivations::kQuantized) return stored;
      return DType::kFloat32;
  }
  return DType::kFloat32;
}

absl::StatusOr<DeviceBufferPtr> CpuBackend::Allocate(size_t bytes) {
  // 64-byte alignment for SIMD loads; aligned_alloc needs a multiple of it.
  size_t rounded = (std::max<size_t>(bytes, 1) + 63) / 64 * 64;
  void* data = std::aligned_alloc(64, rounded);
  if (data == nullptr) {
    return absl::ResourceExhaustedError(absl::StrCat("cannot allocate ", bytes, " bytes"));
  }
  return DeviceBufferPtr(new HostBuffer(data, bytes));
}

absl::Status CpuBackend::CopyToDevice(const void* host, size_t bytes, void* device) {
  if (bytes) std::memcpy(device, host, bytes);
  return absl::OkStatus();
}

absl::Status CpuBackend::CopyToHost(const void* device, size_t bytes, void* host) {
  if (bytes) std::memcpy(host, device, bytes);
  return absl::OkStatus();
}

absl::Status CpuBackend::Upload(const void* host, DType src_dtype, Tensor dst) {
  if (dst.dtype == DType::kFloat32) return ConvertToFloat32(host, src_dtype, dst.numel(), dst.as<float>());
  if (dst.dtype != DType::kBFloat16 && !IsBlockDType(dst.dtype)) {
    return absl::UnimplementedError(absl::StrCat(
        "Upload: the CPU backend stores float32, bfloat16 or a block format, got ",
        dst.DebugString()));
  }
  if (src_dtype == dst.dtype) {
    std::memcpy(dst.data, host, dst.bytes());
    return absl::OkStatus();
  }
  return ConvertThroughFloat32(host, src_dtype, dst.numel(), dst.dtype, dst.data);
}

absl::Status CpuBackend::Embedding(Tensor ids, Tensor table, Tensor out) {
  RETURN_IF_ERROR(CheckEmbedding(ids, table, out, WeightDTypes::kAlsoBf16AndBlocks));
  RETURN_IF_ERROR(RequireFloat32("Embedding", {&out}));
  return cpu::Embedding(ids, table, out);
}

absl::Status CpuBackend::RmsNorm(Tensor x, Tensor weight, float eps, Tensor out) {
  RETURN_IF_ERROR(CheckRmsNorm(x, weight, out));
  RETURN_IF_ERROR(RequireFloat32("RmsNorm", {&x}));
  cpu::RmsNorm(x, weight, eps, out);
  return absl::OkStatus();
}

absl::Status CpuBackend::AddRmsNorm(Tensor residual, Tensor x, Tensor weight, float eps,
                                    Tensor out) {
  RETURN_IF_ERROR(CheckAddRmsNorm(residual, x, weight, out));
  RETURN_IF_ERROR(RequireFloat32("AddRmsNorm", {&x}));
  cpu::AddRmsNorm(residual, x, weight, eps, out);
  return absl::OkStatus();
}

absl::Status CpuBackend::Linear(Tensor x, Tensor weight, Tensor bias, Tensor out) {
  return LinearParts(x, {weight}, bias, out);
}

absl::Status CpuBackend::LinearParts(Tensor x, const std::vector<Tensor>& parts, Tensor bias,
                                     Tensor out) {
  if (parts.empty()) return absl::InvalidArgumentError("LinearParts: no weight parts");
  // Each part is checked as a Linear into the columns it writes; together
  // they must cover out's columns exactly.
  int64_t rows = 0;
  for (const Tensor& part : parts) {
    Tensor columns = out;
    columns.dims[1] = part.dim(0);
    RETURN_IF_ERROR(CheckLinear(x, part, Tensor(), columns, WeightDTypes::kAlsoBf16AndBlocks));
    rows += part.dim(0);
  }
  Tensor whole = parts.front();
  whole.dims[0] = rows;
  RETURN_IF_ERROR(CheckLinear(x, whole, bias, out, WeightDTypes::kAlsoBf16AndBlocks));
  RETURN_IF_ERROR(RequireFloat32("Linear", {&x, &out}));
  cpu::Linear(x, parts, bias, out, activations_ == CpuActivations::kQuantized);
  return absl::OkStatus();
}

absl::Status CpuBackend::RopeSplitQkv(const RopeSplitParams& params) {
  RETURN_IF_ERROR(CheckRopeSplit(params));
  RETURN_IF_ERROR(RequireFloat32("RopeSplitQkv", {&params.qkv}));
  return cpu::RopeSplitQkv(params);
}

absl::Status CpuBackend::SiluMul(Tensor gate_up, Tensor out) {
  RETURN_IF_ERROR(CheckSiluMul(gate_up, out));
  RETURN_IF_ERROR(RequireFloat32("SiluMul", {&gate_up}));
  cpu::SiluMul(gate_up, out);
  return absl::OkStatus();
}

absl::Status CpuBackend::GatherRows(Tensor x, Tensor rows, Tensor out) {
  RETURN_IF_ERROR(CheckGatherRows(x, rows, out));
  return cpu::GatherRows(x, rows, out);
}

absl::Status CpuBackend::PrefillAttention(const PrefillAttentionParams& params) {
  RETURN_IF_ERROR(CheckPrefillAttention(params));
  RETURN_IF_ERROR(RequireFloat32("PrefillAttention", {&params.q}));
  return cpu::PrefillAttention(params);
}

absl::Status CpuBackend::DecodeAttention(const DecodeAttentionParams& params) {
  RETURN_IF_ERROR(CheckDecodeAttention(params));
  RETURN_IF_ERROR(RequireFloat32("DecodeAttention", {&params.q}));
  return cpu::DecodeAttention(params);
}

absl::Status CpuBackend::Sample(const SampleParams& params) {
  RETURN_IF_ERROR(CheckSample(params));
  cpu::Sample(params);
  return absl::OkStatus();
}

absl::Status CpuBackend::MaskLogits(const MaskLogitsParams& params) {
  RETURN_IF_ERROR(CheckMaskLogits(params));
  cpu::MaskLogits(params);
  return absl::OkStatus();
}

}  // namespace kvserve
