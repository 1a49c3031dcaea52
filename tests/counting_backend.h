// A Backend decorator for tests: forwards every call to a real backend and
// counts the buffers allocated, so a test can prove that steps after
// start-up allocate nothing (the graph-safe execution plan).
#pragma once

#include <memory>

#include "kernels/backend.h"

namespace kvserve::testing {

class CountingBackend final : public Backend {
 public:
  explicit CountingBackend(std::unique_ptr<Backend> inner) : inner_(std::move(inner)) {}
  int num_allocations() const { return allocations_; }

  std::string name() const override { return inner_->name(); }
  DType compute_dtype() const override { return inner_->compute_dtype(); }
  DType MatrixWeightDType(DType stored) const override { return inner_->MatrixWeightDType(stored); }
  absl::StatusOr<DeviceBufferPtr> Allocate(size_t bytes) override {
    ++allocations_;
    return inner_->Allocate(bytes);
  }
  absl::Status CopyToDevice(const void* host, size_t bytes, void* device) override {
    return inner_->CopyToDevice(host, bytes, device);
  }
  absl::Status CopyToHost(const void* device, size_t bytes, void* host) override {
    return inner_->CopyToHost(device, bytes, host);
  }
  absl::Status Upload(const void* host, DType src_dtype, Tensor dst) override {
    return inner_->Upload(host, src_dtype, dst);
  }
  absl::Status Synchronize() override { return inner_->Synchronize(); }
  absl::StatusOr<DeviceMemoryInfo> MemoryInfo() override { return inner_->MemoryInfo(); }
  absl::Status Reserve(const StepLimits& limits) override { return inner_->Reserve(limits); }
  bool SupportsGraphs() const override { return inner_->SupportsGraphs(); }
  absl::Status BeginCapture(int bucket) override { return inner_->BeginCapture(bucket); }
  absl::Status EndCapture(int bucket) override { return inner_->EndCapture(bucket); }
  absl::Status Replay(int bucket) override { return inner_->Replay(bucket); }

  absl::Status Embedding(Tensor ids, Tensor table, Tensor out) override {
    return inner_->Embedding(ids, table, out);
  }
  absl::Status RmsNorm(Tensor x, Tensor weight, float eps, Tensor out) override {
    return inner_->RmsNorm(x, weight, eps, out);
  }
  absl::Status AddRmsNorm(Tensor residual, Tensor x, Tensor weight, float eps, Tensor out) override {
    return inner_->AddRmsNorm(residual, x, weight, eps, out);
  }
  absl::Status Linear(Tensor x, Tensor weight, Tensor bias, Tensor out) override {
    return inner_->Linear(x, weight, bias, out);
  }
  absl::Status RopeSplitQkv(const RopeSplitParams& params) override { return inner_->RopeSplitQkv(params); }
  absl::Status SiluMul(Tensor gate_up, Tensor out) override { return inner_->SiluMul(gate_up, out); }
  absl::Status GatherRows(Tensor x, Tensor rows, Tensor out) override {
    return inner_->GatherRows(x, rows, out);
  }
  absl::Status PrefillAttention(const PrefillAttentionParams& params) override {
    return inner_->PrefillAttention(params);
  }
  absl::Status DecodeAttention(const DecodeAttentionParams& params) override {
    return inner_->DecodeAttention(params);
  }
  absl::Status Sample(const SampleParams& params) override { return inner_->Sample(params); }
  absl::Status MaskLogits(const MaskLogitsParams& params) override {
    return inner_->MaskLogits(params);
  }

 private:
  std::unique_ptr<Backend> inner_;
  int allocations_ = 0;  // the engine calls a backend from one thread
};

}  // namespace kvserve::testing
