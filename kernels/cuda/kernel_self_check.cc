#include "kernels/cuda/kernel_self_check.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <numeric>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_resources.h"
#include "kernels/cuda/decode_attention.h"
#include "kernels/cuda/flash_decode.h"
#include "kernels/cuda/prefill_attention.h"
#include "kernels/cuda/prefill_mma.h"
#include "kernels/cuda/rmsnorm.cuh"
#include "kernels/cuda/rope_split.h"
#include "kernels/dtype.h"

namespace kvserve::cuda {
namespace {

// Device memory viewed as a tensor, filled from and read back to host floats
// on the checks' stream (start-up: synchronous is fine).
class Array {
 public:
  static absl::StatusOr<Array> Make(const SelfCheckDevice& device, DType dtype,
                                    std::initializer_list<int64_t> shape) {
    Array a;
    a.stream_ = device.stream;
    const Tensor probe(nullptr, dtype, shape);
    ASSIGN_OR_RETURN(a.buffer_, CudaBuffer::Allocate(std::max<size_t>(16, probe.bytes())));
    a.tensor_ = Tensor(a.buffer_->data(), dtype, shape);
    return a;
  }
  Tensor tensor() const { return tensor_; }
  template <typename T>
  T* data() const { return static_cast<T*>(tensor_.data); }

  absl::Status Set(const std::vector<float>& values) {
    std::vector<uint8_t> bytes(DTypeBytes(tensor_.dtype, tensor_.numel()));
    RETURN_IF_ERROR(ConvertFromFloat32(values.data(), tensor_.numel(), tensor_.dtype, bytes.data()));
    return Copy(bytes.data(), bytes.size(), cudaMemcpyHostToDevice);
  }
  absl::Status SetInts(const std::vector<int32_t>& values) {
    return Copy(const_cast<int32_t*>(values.data()), values.size() * sizeof(int32_t),
                cudaMemcpyHostToDevice);
  }
  /// Every bit set: NaN in each float dtype, so an unwritten element shows.
  absl::Status Poison() {
    RETURN_IF_CUDA_ERROR(
        cudaMemsetAsync(tensor_.data, 0xff, DTypeBytes(tensor_.dtype, tensor_.numel()), stream_));
    return absl::OkStatus();
  }
  absl::Status Zero() {
    RETURN_IF_CUDA_ERROR(
        cudaMemsetAsync(tensor_.data, 0, DTypeBytes(tensor_.dtype, tensor_.numel()), stream_));
    return absl::OkStatus();
  }
  absl::StatusOr<std::vector<float>> Get() const {
    std::vector<uint8_t> bytes(DTypeBytes(tensor_.dtype, tensor_.numel()));
    RETURN_IF_ERROR(Copy(bytes.data(), bytes.size(), cudaMemcpyDeviceToHost));
    std::vector<float> values(tensor_.numel());
    RETURN_IF_ERROR(ConvertToFloat32(bytes.data(), tensor_.dtype, tensor_.numel(), values.data()));
    return values;
  }

 private:
  absl::Status Copy(void* host, size_t bytes, cudaMemcpyKind kind) const {
    void* dst = kind == cudaMemcpyHostToDevice ? tensor_.data : host;
    const void* src = kind == cudaMemcpyHostToDevice ? host : tensor_.data;
    RETURN_IF_CUDA_ERROR(cudaMemcpyAsync(dst, src, bytes, kind, stream_));
    RETURN_IF_CUDA_ERROR(cudaStreamSynchronize(stream_));
    return absl::OkStatus();
  }

  cudaStream_t stream_ = nullptr;
  DeviceBufferPtr buffer_;
  Tensor tensor_;
};

std::vector<float> Normal(std::mt19937& rng, int64_t n, float scale = 1.f) {
  std::normal_distribution<float> dist(0.f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// Fails with the worst element when fast and reference disagree.
absl::Status Agree(absl::string_view what, const std::vector<float>& fast,
                   const std::vector<float>& ref, DType dtype) {
  const AgreementBound bound = SelfCheckBound(dtype);
  double worst_excess = 0;
  size_t worst = 0;
  bool bad = false;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double allowed = bound.atol + bound.rtol * std::fabs(ref[i]);
    const double diff = std::fabs(double(fast[i]) - double(ref[i]));
    if (!std::isfinite(fast[i]) || diff > allowed) {
      const double excess = std::isfinite(fast[i]) ? diff - allowed : INFINITY;
      if (!bad || excess > worst_excess) worst_excess = excess, worst = i;
      bad = true;
    }
  }
  if (!bad) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrFormat(
      "%s: element %d of %d is %g where the reference kernel gives %g (bound %g + %g·|ref|)", what,
      worst, ref.size(), fast[worst], ref[worst], bound.atol, bound.rtol));
}

// The device error word after a check: a fast kernel that reports an error
// on valid inputs is as wrong as one that computes garbage.
absl::Status TakeError(const SelfCheckDevice& device, absl::string_view what) {
  DeviceError e{};
  RETURN_IF_CUDA_ERROR(
      cudaMemcpyAsync(&e, device.error, sizeof(e), cudaMemcpyDeviceToHost, device.stream));
  RETURN_IF_CUDA_ERROR(cudaStreamSynchronize(device.stream));
  if (e.code == 0) return absl::OkStatus();
  RETURN_IF_CUDA_ERROR(cudaMemsetAsync(device.error, 0, sizeof(DeviceError), device.stream));
  RETURN_IF_CUDA_ERROR(cudaStreamSynchronize(device.stream));
  return absl::FailedPreconditionError(
      absl::StrCat(what, ": reported an error on valid inputs: ", DeviceErrorStatus(e).message()));
}

}  // namespace

AgreementBound SelfCheckBound(DType dtype) {
  switch (dtype) {
    case DType::kBFloat16: return {2e-2, 2e-2};  // 8 mantissa bits: 2⁻⁸ ≈ 4e-3 per rounding
    case DType::kFloat16: return {4e-3, 4e-3};   // 11 bits
    default: return {1e-4, 1e-4};
  }
}

absl::Status SelfCheckFlashDecode(const SelfCheckDevice& device, DType dtype,
                                  const AttentionShape& shape, int block_size) {
  // No key, one key, within one pass, several splits with a partial block.
  const std::vector<int> contexts = {0, 1, 45, 333, 2077};
  const int seqs = static_cast<int>(contexts.size());
  DecodeAttentionParams p;
  p.shape = shape;
  p.num_seqs = seqs;
  p.max_context_len = *std::max_element(contexts.begin(), contexts.end());
  p.cache.block_size = block_size;
  p.kv_written = true;
  p.q = Tensor(nullptr, dtype, {seqs, shape.num_heads, shape.head_dim});
  if (!FlashDecodeServes(p)) return absl::OkStatus();

  std::mt19937 rng(20261126);
  int width = 1, blocks = 2;
  for (int c : contexts) {
    width = std::max(width, (c + block_size - 1) / block_size);
    blocks += (c + block_size - 1) / block_size;
  }
  std::vector<int32_t> ids(blocks);
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);
  std::vector<int32_t> tables(size_t(seqs) * width, -1);
  for (int b = 0, next = 0; b < seqs; ++b) {
    for (int i = 0; i < (contexts[b] + block_size - 1) / block_size; ++i) {
      tables[size_t(b) * width + i] = ids[next++];
    }
  }
  const int64_t kv_elems = int64_t(blocks) * block_size * shape.num_kv_heads * shape.head_dim;
  ASSIGN_OR_RETURN(Array q, Array::Make(device, dtype, {seqs, shape.num_heads, shape.head_dim}));
  ASSIGN_OR_RETURN(Array kv_new, Array::Make(device, dtype, {seqs, shape.num_kv_heads, shape.head_dim}));
  ASSIGN_OR_RETURN(Array out, Array::Make(device, dtype, {seqs, shape.num_heads, shape.head_dim}));
  ASSIGN_OR_RETURN(Array k, Array::Make(device, dtype, {blocks, block_size, shape.num_kv_heads,
                                                        shape.head_dim}));
  ASSIGN_OR_RETURN(Array v, Array::Make(device, dtype, {blocks, block_size, shape.num_kv_heads,
                                                        shape.head_dim}));
  ASSIGN_OR_RETURN(Array lens, Array::Make(device, DType::kInt32, {seqs}));
  ASSIGN_OR_RETURN(Array table, Array::Make(device, DType::kInt32, {seqs, width}));
  RETURN_IF_ERROR(q.Set(Normal(rng, q.tensor().numel())));
  RETURN_IF_ERROR(k.Set(Normal(rng, kv_elems)));
  RETURN_IF_ERROR(v.Set(Normal(rng, kv_elems)));
  RETURN_IF_ERROR(lens.SetInts(contexts));
  RETURN_IF_ERROR(table.SetInts(tables));
  p.q = q.tensor();
  p.k = p.v = kv_new.tensor();
  p.out = out.tensor();
  p.context_lens = lens.tensor();
  p.block_tables = table.tensor();
  p.cache.k = k.tensor();
  p.cache.v = v.tensor();

  // The reference, with its own split workspace.
  const size_t ref_floats = MaxDecodeWorkspaceFloats(seqs, shape, p.max_context_len, device.num_sms);
  ASSIGN_OR_RETURN(Array ref_ws, Array::Make(device, DType::kFloat32, {int64_t(std::max<size_t>(ref_floats, 1))}));
  const DecodePlan ref_plan = PlanDecodeAttention(p, device.num_sms, ref_floats);
  RETURN_IF_ERROR(out.Poison());
  RETURN_IF_ERROR(LaunchDecodeAttention(p, ref_plan, ref_ws.data<float>(), device.error, device.stream));
  ASSIGN_OR_RETURN(const std::vector<float> want, out.Get());
  RETURN_IF_ERROR(TakeError(device, "reference decode attention"));

  const FlashDecodeReservation r = MaxFlashDecodeReservation(
      seqs, shape, dtype, block_size, p.max_context_len, device.num_sms);
  ASSIGN_OR_RETURN(Array ws, Array::Make(device, DType::kFloat32, {int64_t(std::max<size_t>(r.workspace_floats, 1))}));
  ASSIGN_OR_RETURN(Array counters, Array::Make(device, DType::kInt32, {int64_t(std::max<size_t>(r.counters, 1))}));
  RETURN_IF_ERROR(counters.Zero());
  const FlashDecodePlan plan =
      PlanFlashDecode(p, device.num_sms, r.workspace_floats, r.counters);
  // Twice: the second launch finds the merge counters as the first left them.
  for (int run = 0; run < 2; ++run) {
    RETURN_IF_ERROR(out.Poison());
    RETURN_IF_ERROR(LaunchFlashDecode(p, plan, ws.data<float>(), counters.data<int>(),
                                      device.error, device.stream));
    ASSIGN_OR_RETURN(const std::vector<float> got, out.Get());
    const std::string what = absl::StrCat("flash decode (", DTypeName(dtype), ", H ",
                                          shape.num_heads, ", Hkv ", shape.num_kv_heads, ", D ",
                                          shape.head_dim, ", block ", block_size, ", ",
                                          plan.num_splits, " splits, run ", run + 1, ")");
    RETURN_IF_ERROR(TakeError(device, what));
    RETURN_IF_ERROR(Agree(what, got, want, dtype));
  }
  return absl::OkStatus();
}

namespace {

struct PrefillSeq {
  int context, queries;
};

absl::Status CheckPrefillScenario(const SelfCheckDevice& device, DType dtype,
                                  const AttentionShape& shape, int block_size,
                                  const std::vector<PrefillSeq>& seqs, absl::string_view name);

}  // namespace

absl::Status SelfCheckPrefillMma(const SelfCheckDevice& device, DType dtype,
                                 const AttentionShape& shape, int block_size) {
  // Whole prompts (one row, a partial tile, two tiles and a bit) and a chunk
  // whose rows sit behind earlier cached keys; then one short chunk behind a
  // long context, which the plan splits over its keys (merged in the kernel).
  RETURN_IF_ERROR(CheckPrefillScenario(device, dtype, shape, block_size,
                                       {{1, 1}, {67, 67}, {130, 130}, {300, 70}}, "prompts"));
  return CheckPrefillScenario(device, dtype, shape, block_size, {{2500, 21}},
                              "a chunk behind 2479 keys");
}

namespace {

absl::Status CheckPrefillScenario(const SelfCheckDevice& device, DType dtype,
                                  const AttentionShape& shape, int block_size,
                                  const std::vector<PrefillSeq>& seqs, absl::string_view name) {
  using Seq = PrefillSeq;
  const int n = static_cast<int>(seqs.size());
  PrefillAttentionParams p;
  p.shape = shape;
  p.num_seqs = n;
  p.cache.block_size = block_size;
  p.kv_written = true;
  p.q = Tensor(nullptr, dtype, {1, shape.num_heads, shape.head_dim});
  if (!PrefillMmaServes(p)) return absl::OkStatus();

  std::mt19937 rng(7);
  std::vector<int32_t> cu = {0}, lens;
  int width = 1, blocks = 1, max_q = 0, max_context = 0;
  for (const Seq& q : seqs) {
    cu.push_back(cu.back() + q.queries);
    lens.push_back(q.context);
    width = std::max(width, (q.context + block_size - 1) / block_size);
    blocks += (q.context + block_size - 1) / block_size;
    max_q = std::max(max_q, q.queries);
    max_context = std::max(max_context, q.context);
  }
  std::vector<int32_t> ids(blocks);
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);
  std::vector<int32_t> tables(size_t(n) * width, -1);
  for (int b = 0, next = 0; b < n; ++b) {
    for (int i = 0; i < (seqs[b].context + block_size - 1) / block_size; ++i) {
      tables[size_t(b) * width + i] = ids[next++];
    }
  }
  const int64_t tokens = cu.back();
  ASSIGN_OR_RETURN(Array q, Array::Make(device, dtype, {tokens, shape.num_heads, shape.head_dim}));
  ASSIGN_OR_RETURN(Array kv_new, Array::Make(device, dtype, {tokens, shape.num_kv_heads, shape.head_dim}));
  ASSIGN_OR_RETURN(Array out, Array::Make(device, dtype, {tokens, shape.num_heads, shape.head_dim}));
  ASSIGN_OR_RETURN(Array k, Array::Make(device, dtype, {blocks, block_size, shape.num_kv_heads,
                                                        shape.head_dim}));
  ASSIGN_OR_RETURN(Array v, Array::Make(device, dtype, {blocks, block_size, shape.num_kv_heads,
                                                        shape.head_dim}));
  ASSIGN_OR_RETURN(Array cu_dev, Array::Make(device, DType::kInt32, {n + 1}));
  ASSIGN_OR_RETURN(Array lens_dev, Array::Make(device, DType::kInt32, {n}));
  ASSIGN_OR_RETURN(Array table, Array::Make(device, DType::kInt32, {n, width}));
  RETURN_IF_ERROR(q.Set(Normal(rng, q.tensor().numel())));
  RETURN_IF_ERROR(k.Set(Normal(rng, k.tensor().numel())));
  RETURN_IF_ERROR(v.Set(Normal(rng, v.tensor().numel())));
  RETURN_IF_ERROR(cu_dev.SetInts(cu));
  RETURN_IF_ERROR(lens_dev.SetInts(lens));
  RETURN_IF_ERROR(table.SetInts(tables));
  p.q = q.tensor();
  p.k = p.v = kv_new.tensor();
  p.out = out.tensor();
  p.cu_seqlens_q = cu_dev.tensor();
  p.context_lens = lens_dev.tensor();
  p.block_tables = table.tensor();
  p.cache.k = k.tensor();
  p.cache.v = v.tensor();
  p.max_q_len = max_q;
  p.max_context_len = max_context;

  RETURN_IF_ERROR(out.Poison());
  RETURN_IF_ERROR(LaunchPrefillAttention(p, device.error, device.stream));
  ASSIGN_OR_RETURN(const std::vector<float> want, out.Get());
  RETURN_IF_ERROR(TakeError(device, "reference prefill attention"));
  const PrefillMmaReservation r = MaxPrefillMmaReservation(shape.head_dim, device.num_sms);
  ASSIGN_OR_RETURN(Array ws, Array::Make(device, DType::kFloat32, {int64_t(std::max<size_t>(r.workspace_floats, 1))}));
  ASSIGN_OR_RETURN(Array counters, Array::Make(device, DType::kInt32, {int64_t(std::max<size_t>(r.counters, 1))}));
  RETURN_IF_ERROR(counters.Zero());
  const PrefillMmaPlan plan = PlanPrefillMma(p, device.num_sms, r.workspace_floats, r.counters);
  const std::string what = absl::StrCat("tensor-core prefill (", DTypeName(dtype), ", H ",
                                        shape.num_heads, ", Hkv ", shape.num_kv_heads, ", D ",
                                        shape.head_dim, ", block ", block_size, ", ", name, ", ",
                                        plan.num_splits, " key splits)");
  // Twice: the second launch finds the merge counters as the first left them.
  for (int run = 0; run < 2; ++run) {
    RETURN_IF_ERROR(out.Poison());
    RETURN_IF_ERROR(LaunchPrefillMma(p, plan, ws.data<float>(), counters.data<int>(), device.error,
                                     device.stream));
    ASSIGN_OR_RETURN(const std::vector<float> got, out.Get());
    RETURN_IF_ERROR(TakeError(device, what));
    RETURN_IF_ERROR(Agree(what, got, want, dtype));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status SelfCheckRmsNorm(const SelfCheckDevice& device, DType dtype, int hidden_size) {
  if (hidden_size <= 0) return absl::OkStatus();
  std::mt19937 rng(11);
  const int rows = 3;
  ASSIGN_OR_RETURN(Array x, Array::Make(device, dtype, {rows, hidden_size}));
  ASSIGN_OR_RETURN(Array weight, Array::Make(device, dtype, {hidden_size}));
  ASSIGN_OR_RETURN(Array residual, Array::Make(device, dtype, {rows, hidden_size}));
  ASSIGN_OR_RETURN(Array out, Array::Make(device, dtype, {rows, hidden_size}));
  RETURN_IF_ERROR(x.Set(Normal(rng, int64_t(rows) * hidden_size)));
  RETURN_IF_ERROR(weight.Set(Normal(rng, hidden_size, 0.5f)));
  const std::vector<float> residual_in = Normal(rng, int64_t(rows) * hidden_size, 4.f);
  for (bool with_residual : {false, true}) {
    std::vector<float> want_out, want_residual;
    for (bool fast : {false, true}) {
      RETURN_IF_ERROR(residual.Set(residual_in));
      RETURN_IF_ERROR(out.Poison());
      const Tensor r = with_residual ? residual.tensor() : Tensor();
      if (fast) {
        RETURN_IF_ERROR(LaunchRmsNormFast(r, x.tensor(), weight.tensor(), 1e-5f, out.tensor(),
                                          device.stream));
      } else {
        RETURN_IF_ERROR(
            LaunchRmsNorm(r, x.tensor(), weight.tensor(), 1e-5f, out.tensor(), device.stream));
      }
      ASSIGN_OR_RETURN(std::vector<float> got, out.Get());
      ASSIGN_OR_RETURN(std::vector<float> got_residual, residual.Get());
      if (!fast) {
        want_out = std::move(got);
        want_residual = std::move(got_residual);
        continue;
      }
      const std::string what = absl::StrCat(with_residual ? "add + RMSNorm" : "RMSNorm", " (",
                                            DTypeName(dtype), ", ", hidden_size, " wide)");
      RETURN_IF_ERROR(Agree(what, got, want_out, dtype));
      RETURN_IF_ERROR(Agree(absl::StrCat(what, ", residual"), got_residual, want_residual, dtype));
    }
  }
  return absl::OkStatus();
}

absl::Status SelfCheckRopeKvWrite(const SelfCheckDevice& device, DType dtype,
                                  const AttentionShape& shape, int block_size) {
  std::mt19937 rng(5);
  const int tokens = 4, max_pos = 1024, blocks = 4;
  const int h = shape.num_heads, hkv = shape.num_kv_heads, d = shape.head_dim;
  const std::vector<int32_t> positions = {0, 7, 300, 1023};
  // A padded row (no write) among real slots.
  const std::vector<int32_t> slots = {3, kPadSlot, block_size + 5, 3 * block_size + block_size - 1};
  std::vector<float> table(int64_t(max_pos) * d);
  for (int pos = 0; pos < max_pos; ++pos) {
    for (int i = 0; i < d / 2; ++i) {
      const double angle = pos * std::pow(10000.0, -2.0 * i / d);
      table[int64_t(pos) * d + i] = static_cast<float>(std::cos(angle));
      table[int64_t(pos) * d + d / 2 + i] = static_cast<float>(std::sin(angle));
    }
  }
  ASSIGN_OR_RETURN(Array qkv, Array::Make(device, dtype, {tokens, int64_t(h + 2 * hkv) * d}));
  ASSIGN_OR_RETURN(Array pos, Array::Make(device, DType::kInt32, {tokens}));
  ASSIGN_OR_RETURN(Array cos_sin, Array::Make(device, DType::kFloat32, {max_pos, d}));
  ASSIGN_OR_RETURN(Array slot, Array::Make(device, DType::kInt32, {tokens}));
  ASSIGN_OR_RETURN(Array q, Array::Make(device, dtype, {tokens, h, d}));
  ASSIGN_OR_RETURN(Array k, Array::Make(device, dtype, {tokens, hkv, d}));
  ASSIGN_OR_RETURN(Array v, Array::Make(device, dtype, {tokens, hkv, d}));
  ASSIGN_OR_RETURN(Array ck, Array::Make(device, dtype, {blocks, block_size, hkv, d}));
  ASSIGN_OR_RETURN(Array cv, Array::Make(device, dtype, {blocks, block_size, hkv, d}));
  RETURN_IF_ERROR(qkv.Set(Normal(rng, qkv.tensor().numel())));
  RETURN_IF_ERROR(pos.SetInts(positions));
  RETURN_IF_ERROR(cos_sin.Set(table));
  RETURN_IF_ERROR(slot.SetInts(slots));
  const std::vector<float> cache_in = Normal(rng, ck.tensor().numel());
  RopeSplitParams p;
  p.qkv = qkv.tensor();
  p.positions = pos.tensor();
  p.cos_sin = cos_sin.tensor();
  p.q_out = q.tensor();
  p.k_out = k.tensor();
  p.v_out = v.tensor();
  p.shape = shape;
  p.slot_mapping = slot.tensor();
  p.cache = PagedKvCache{ck.tensor(), cv.tensor(), block_size};
  std::vector<std::vector<float>> want;
  for (bool fast : {false, true}) {
    for (Array* a : {&q, &k, &v}) RETURN_IF_ERROR(a->Poison());
    RETURN_IF_ERROR(ck.Set(cache_in));
    RETURN_IF_ERROR(cv.Set(cache_in));
    if (fast) {
      RETURN_IF_ERROR(LaunchRopeSplitKvWrite(p, device.error, device.stream));
    } else {
      RETURN_IF_ERROR(LaunchRopeSplit(p, device.error, device.stream));
    }
    std::vector<std::vector<float>> got;
    for (Array* a : {&q, &k, &v, &ck, &cv}) {
      ASSIGN_OR_RETURN(std::vector<float> values, a->Get());
      got.push_back(std::move(values));
    }
    const std::string what = absl::StrCat("RoPE + KV-cache write (", DTypeName(dtype), ", H ", h,
                                          ", Hkv ", hkv, ", D ", d, ", block ", block_size, ")");
    RETURN_IF_ERROR(TakeError(device, fast ? what : "reference RoPE"));
    if (!fast) {
      want = std::move(got);
      continue;
    }
    const char* parts[] = {"q", "k", "v", "K cache", "V cache"};
    for (int i = 0; i < 5; ++i) {
      RETURN_IF_ERROR(Agree(absl::StrCat(what, ", ", parts[i]), got[i], want[i], dtype));
    }
  }
  return absl::OkStatus();
}

}  // namespace kvserve::cuda
