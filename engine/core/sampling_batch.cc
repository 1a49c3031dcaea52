#include "engine/core/sampling_batch.h"

#include <algorithm>
#include <cstring>

#include "base/status_macros.h"
#include "engine/core/request_validation.h"

namespace kvserve {
namespace {

// Per-row words uploaded: 7 float32 and 2 int32 per row, and two offset lists of S + 1.
constexpr size_t kParamWordsPerRow = 11;
// Output words: token and its logprob, then up to kMaxTopLogprobs ids and logprobs.
constexpr size_t kOutWordsPerRow = 2 + 2 * kMaxTopLogprobs;

// Appends `values` (4-byte elements) to `words` and returns a view of them at
// the same offset in `device`.
template <typename T>
Tensor Append(std::vector<uint32_t>& words, void* device, const std::vector<T>& values,
              DType dtype, std::initializer_list<int64_t> shape) {
  static_assert(sizeof(T) == sizeof(uint32_t));
  Tensor t(static_cast<uint32_t*>(device) + words.size(), dtype, shape);
  const size_t at = words.size();
  words.resize(at + values.size());
  if (!values.empty()) std::memcpy(words.data() + at, values.data(), values.size() * sizeof(T));
  return t;
}

}  // namespace

absl::StatusOr<std::unique_ptr<SamplingBatch>> SamplingBatch::Create(Backend& backend,
                                                                     int max_seqs) {
  std::unique_ptr<SamplingBatch> b(new SamplingBatch(backend, max_seqs));
  const size_t param_words = kParamWordsPerRow * size_t(max_seqs) + 2;
  const size_t out_words = kOutWordsPerRow * size_t(max_seqs);
  ASSIGN_OR_RETURN(b->params_buffer_, backend.Allocate(param_words * sizeof(uint32_t)));
  ASSIGN_OR_RETURN(b->out_buffer_, backend.Allocate(out_words * sizeof(uint32_t)));
  b->host_params_.reserve(param_words);
  b->host_out_.reserve(out_words);
  // Room for ~256 seen tokens per row up front: growing later allocates
  // mid-step, which a GPU pays for with a device-wide wait.
  RETURN_IF_ERROR(b->ReserveListBuffer(size_t(max_seqs) * 3 * 256));
  b->Clear();
  return b;
}

void SamplingBatch::Clear() {
  for (auto* v : {&temperature_, &top_p_, &min_p_, &uniform_, &repetition_, &presence_,
                  &frequency_}) {
    v->clear();
  }
  for (auto* v : {&top_k_, &top_n_, &seen_offsets_, &banned_offsets_, &seen_tokens_,
                  &seen_counts_, &banned_tokens_}) {
    v->clear();
  }
  seen_offsets_.push_back(0);
  banned_offsets_.push_back(0);
  capture_.clear();
}

void SamplingBatch::Add(const SamplingRow& row) {
  temperature_.push_back(row.temperature);
  top_k_.push_back(row.top_k);
  top_p_.push_back(row.top_p);
  min_p_.push_back(row.min_p);
  uniform_.push_back(row.uniform);
  repetition_.push_back(row.repetition_penalty);
  presence_.push_back(row.presence_penalty);
  frequency_.push_back(row.frequency_penalty);
  seen_tokens_.insert(seen_tokens_.end(), row.seen_tokens.begin(), row.seen_tokens.end());
  seen_counts_.insert(seen_counts_.end(), row.seen_counts.begin(), row.seen_counts.end());
  seen_offsets_.push_back(static_cast<int32_t>(seen_tokens_.size()));
  banned_tokens_.insert(banned_tokens_.end(), row.banned_tokens.begin(), row.banned_tokens.end());
  banned_offsets_.push_back(static_cast<int32_t>(banned_tokens_.size()));
  top_n_.push_back(std::min<int32_t>(row.top_logprobs, kMaxTopLogprobs));
  capture_.push_back(row.capture_logits);
}

bool SamplingBatch::any_capture() const {
  return std::find(capture_.begin(), capture_.end(), true) != capture_.end();
}

absl::Status SamplingBatch::ReserveListBuffer(size_t ints) {
  if (ints <= list_capacity_) return absl::OkStatus();
  const size_t capacity = std::max(ints, 2 * list_capacity_);
  list_buffer_.reset();
  list_capacity_ = 0;
  ASSIGN_OR_RETURN(list_buffer_, backend_.Allocate(capacity * sizeof(int32_t)));
  list_capacity_ = capacity;
  return absl::OkStatus();
}

absl::StatusOr<SampleParams> SamplingBatch::Upload(Tensor logits) {
  const int s = size();
  if (s > max_seqs_) return absl::InternalError("more sampled rows than the batch was sized for");
  SampleParams p;
  p.num_rows = s;
  p.logits = logits;
  host_params_.clear();
  void* params = params_buffer_->data();
  p.temperature = Append(host_params_, params, temperature_, DType::kFloat32, {s});
  p.top_p = Append(host_params_, params, top_p_, DType::kFloat32, {s});
  p.min_p = Append(host_params_, params, min_p_, DType::kFloat32, {s});
  p.uniform = Append(host_params_, params, uniform_, DType::kFloat32, {s});
  p.top_k = Append(host_params_, params, top_k_, DType::kInt32, {s});

  const int32_t vocab = static_cast<int32_t>(logits.dim(1));
  for (int32_t& n : top_n_) n = std::min(n, vocab);
  const int32_t k = *std::max_element(top_n_.begin(), top_n_.end());  // -1: none wants logprobs
  void* out = out_buffer_->data();
  host_out_.assign(size_t(s) * (2 + 2 * std::max(k, 0)), 0);
  p.out_tokens = Tensor(out, DType::kInt32, {s});
  if (k >= 0) {
    LogprobOutputs& l = p.logprobs;
    l.top_n = Append(host_params_, params, top_n_, DType::kInt32, {s});
    l.token_logprob = Tensor(static_cast<uint32_t*>(out) + s, DType::kFloat32, {s});
    l.top_ids = Tensor(static_cast<uint32_t*>(out) + 2 * s, DType::kInt32, {s, k});
    l.top_logprobs = Tensor(static_cast<uint32_t*>(out) + 2 * s + s * k, DType::kFloat32, {s, k});
  }

  if (!seen_tokens_.empty() || !banned_tokens_.empty()) {
    LogitAdjustments& a = p.adjust;
    a.repetition_penalty = Append(host_params_, params, repetition_, DType::kFloat32, {s});
    a.presence_penalty = Append(host_params_, params, presence_, DType::kFloat32, {s});
    a.frequency_penalty = Append(host_params_, params, frequency_, DType::kFloat32, {s});
    a.seen_offsets = Append(host_params_, params, seen_offsets_, DType::kInt32, {s + 1});
    a.banned_offsets = Append(host_params_, params, banned_offsets_, DType::kInt32, {s + 1});
    const int64_t n = static_cast<int64_t>(seen_tokens_.size());
    const int64_t m = static_cast<int64_t>(banned_tokens_.size());
    RETURN_IF_ERROR(ReserveListBuffer(3 * n + 2 * m));
    host_lists_.clear();
    void* lists = list_buffer_->data();
    a.seen_tokens = Append(host_lists_, lists, seen_tokens_, DType::kInt32, {n});
    a.seen_counts = Append(host_lists_, lists, seen_counts_, DType::kInt32, {n});
    a.banned_tokens = Append(host_lists_, lists, banned_tokens_, DType::kInt32, {m});
    // Written by the op, not uploaded.
    a.saved_logits = Tensor(static_cast<uint32_t*>(lists) + host_lists_.size(), DType::kFloat32, {n + m});
    RETURN_IF_ERROR(backend_.CopyToDevice(host_lists_.data(),
                                          host_lists_.size() * sizeof(uint32_t), lists));
  }
  RETURN_IF_ERROR(backend_.CopyToDevice(host_params_.data(),
                                        host_params_.size() * sizeof(uint32_t), params));
  return p;
}

absl::Status SamplingBatch::Download(const SampleParams& p, std::vector<int32_t>& tokens,
                                     std::vector<TokenLogprobs>& logprobs) {
  const int s = p.num_rows;
  RETURN_IF_ERROR(backend_.CopyToHost(out_buffer_->data(), host_out_.size() * sizeof(uint32_t),
                                      host_out_.data()));
  tokens.resize(s);
  std::memcpy(tokens.data(), host_out_.data(), s * sizeof(int32_t));
  logprobs.clear();
  if (!p.logprobs.active()) return absl::OkStatus();
  const int64_t k = p.logprobs.top_ids.dim(1);
  auto word_as_float = [&](size_t i) {
    float f;
    std::memcpy(&f, &host_out_[i], sizeof f);
    return f;
  };
  logprobs.resize(s);
  for (int r = 0; r < s; ++r) {
    if (top_n_[r] < 0) continue;
    TokenLogprobs& l = logprobs[r];
    l.token = {tokens[r], word_as_float(s + r)};
    l.top.resize(top_n_[r]);
    for (int i = 0; i < top_n_[r]; ++i) {
      l.top[i].token_id = static_cast<int32_t>(host_out_[2 * s + r * k + i]);
      l.top[i].logprob = word_as_float(2 * s + s * k + r * k + i);
    }
  }
  return absl::OkStatus();
}

}  // namespace kvserve
