#include "tests/bench/null_backend.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "kernels/op_checks.h"

namespace kvserve::bench {
namespace {

class HostBuffer final : public DeviceBuffer {
 public:
  HostBuffer(void* data, size_t size) : DeviceBuffer(data, size) {}
  ~HostBuffer() override { std::free(data()); }
};

}  // namespace

absl::StatusOr<DeviceBufferPtr> NullBackend::Allocate(size_t bytes) {
  // Untouched pages stay unbacked, so a large KV pool costs no memory here.
  const size_t rounded = (std::max<size_t>(bytes, 1) + 63) / 64 * 64;
  void* data = std::aligned_alloc(64, rounded);
  if (data == nullptr) return absl::ResourceExhaustedError(absl::StrCat("cannot allocate ", bytes, " bytes"));
  return DeviceBufferPtr(new HostBuffer(data, bytes));
}

absl::Status NullBackend::CopyToDevice(const void* host, size_t bytes, void* device) {
  if (bytes) std::memcpy(device, host, bytes);
  return absl::OkStatus();
}

absl::Status NullBackend::CopyToHost(const void* device, size_t bytes, void* host) {
  if (bytes) std::memcpy(host, device, bytes);
  return absl::OkStatus();
}

absl::Status NullBackend::Upload(const void*, DType, Tensor) { return absl::OkStatus(); }

absl::Status NullBackend::Embedding(Tensor ids, Tensor table, Tensor out) {
  return CheckEmbedding(ids, table, out);
}
absl::Status NullBackend::RmsNorm(Tensor x, Tensor weight, float, Tensor out) {
  return CheckRmsNorm(x, weight, out);
}
absl::Status NullBackend::AddRmsNorm(Tensor residual, Tensor x, Tensor weight, float, Tensor out) {
  return CheckAddRmsNorm(residual, x, weight, out);
}
absl::Status NullBackend::Linear(Tensor x, Tensor weight, Tensor bias, Tensor out) {
  return CheckLinear(x, weight, bias, out);
}
absl::Status NullBackend::RopeSplitQkv(const RopeSplitParams& params) { return CheckRopeSplit(params); }
absl::Status NullBackend::SiluMul(Tensor gate_up, Tensor out) { return CheckSiluMul(gate_up, out); }
absl::Status NullBackend::GatherRows(Tensor x, Tensor rows, Tensor out) {
  return CheckGatherRows(x, rows, out);
}
absl::Status NullBackend::PrefillAttention(const PrefillAttentionParams& params) {
  return CheckPrefillAttention(params);
}
absl::Status NullBackend::DecodeAttention(const DecodeAttentionParams& params) {
  return CheckDecodeAttention(params);
}

absl::Status NullBackend::Sample(const SampleParams& p) {
  RETURN_IF_ERROR(CheckSample(p));
  std::fill_n(p.out_tokens.as<int32_t>(), p.num_rows, token_);
  if (p.logprobs.active()) {
    std::fill_n(p.logprobs.top_n.as<int32_t>(), p.num_rows, 0);
    std::fill_n(p.logprobs.token_logprob.as<float>(), p.num_rows, 0.f);
  }
  return absl::OkStatus();
}

}  // namespace kvserve::bench
