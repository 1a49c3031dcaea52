#include "kernels/cpu/cpu_backend.h"

#include <cblas.h>

#include <cstdlib>
#include <cstring>

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

}  // namespace

CpuBackend::CpuBackend() { openblas_set_num_threads(1); }

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
  RETURN_IF_ERROR(RequireFloat32("Upload", {&dst}));
  return ConvertToFloat32(host, src_dtype, dst.numel(), dst.as<float>());
}

absl::Status CpuBackend::Embedding(Tensor ids, Tensor table, Tensor out) {
  RETURN_IF_ERROR(CheckEmbedding(ids, table, out));
  RETURN_IF_ERROR(RequireFloat32("Embedding", {&table, &out}));
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
  RETURN_IF_ERROR(CheckLinear(x, weight, bias, out));
  RETURN_IF_ERROR(RequireFloat32("Linear", {&x, &out}));
  cpu::Linear(x, weight, bias, out);
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

}  // namespace kvserve
