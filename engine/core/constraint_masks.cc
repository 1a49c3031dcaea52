#include "engine/core/constraint_masks.h"

#include <algorithm>
#include <cstring>

#include "base/status_macros.h"

namespace kvserve {

absl::StatusOr<std::unique_ptr<ConstraintMasks>> ConstraintMasks::Create(Backend& backend,
                                                                         int max_seqs, int vocab) {
  std::unique_ptr<ConstraintMasks> m(new ConstraintMasks(backend, max_seqs, vocab));
  // Allocated up front: growing mid-step would cost a GPU a device-wide wait.
  ASSIGN_OR_RETURN(m->buffer_, backend.Allocate(size_t(max_seqs) * (1 + m->words_) * 4));
  return m;
}

ConstraintMasks::ConstraintMasks(Backend& backend, int max_seqs, int vocab)
    : backend_(backend), max_seqs_(max_seqs), vocab_(vocab), words_((vocab + 31) / 32) {}

ConstraintMasks::~ConstraintMasks() {
  if (!worker_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    quit_ = true;
  }
  cv_.notify_all();
  worker_.join();
}

void ConstraintMasks::Clear() {
  Wait();
  rows_.clear();
  seqs_.clear();
}

void ConstraintMasks::WorkerLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return work_ || quit_; });
    if (quit_) return;
    work_ = false;
    lock.unlock();
    Build();
    lock.lock();
    done_ = true;
    cv_.notify_all();
  }
}

void ConstraintMasks::Start() {
  if (rows_.empty()) return;
  // Started on the first constrained step: most servers never see one.
  if (!worker_.joinable()) worker_ = std::thread([this] { WorkerLoop(); });
  {
    std::lock_guard<std::mutex> lock(mu_);
    work_ = true;
    done_ = false;
  }
  cv_.notify_all();
}

bool ConstraintMasks::CatchUp(RunnerSequence& seq) {
  grammar::ConstraintMatcher& m = seq.matcher;
  const int generated = seq.num_generated();
  const std::vector<int32_t>& ends = seq.sampling.end_tokens;
  for (; m.consumed < generated; ++m.consumed) {
    const int32_t token = seq.tokens[seq.prompt_len + m.consumed];
    if (m.ended || m.state == grammar::kDeadState) continue;
    if (std::find(ends.begin(), ends.end(), token) != ends.end() &&
        m.constraint->Accepting(m.state)) {
      m.ended = true;
      continue;
    }
    m.state = m.constraint->AdvanceToken(m.state, token);
  }
  return m.state != grammar::kDeadState;
}

void ConstraintMasks::Add(int row, RunnerSequence& seq) {
  if (seq.sampling.constraint == nullptr) return;
  rows_.push_back(row);
  seqs_.push_back(&seq);
}

void ConstraintMasks::Build() {
  host_.assign(rows_.size() * words_, 0u);
  for (size_t i = 0; i < rows_.size(); ++i) BuildRow(i);
}

void ConstraintMasks::BuildRow(size_t i) {
  RunnerSequence& seq = *seqs_[i];
  uint32_t* mask = host_.data() + i * words_;
  grammar::ConstraintMatcher& m = seq.matcher;
  const bool alive = CatchUp(seq);
  bool allow_end = !alive || m.ended;
  if (alive && !m.ended) {
    // The constraint's vocabulary is the tokenizer's; the logits row may be
    // wider (padded embeddings), and those ids stay masked.
    const int words = std::min(words_, m.constraint->vocabulary().mask_words());
    if (words == m.constraint->vocabulary().mask_words()) {
      m.constraint->OrMask(m.state, mask);
    } else {
      narrow_.assign(m.constraint->vocabulary().mask_words(), 0u);
      m.constraint->OrMask(m.state, narrow_.data());
      std::memcpy(mask, narrow_.data(), size_t(words) * 4);
    }
    allow_end = m.constraint->Accepting(m.state) ||
                std::all_of(mask, mask + words_, [](uint32_t w) { return w == 0; });
  }
  if (allow_end) {
    for (int32_t id : seq.sampling.end_tokens) {
      if (id >= 0 && id < vocab_) mask[id >> 5] |= 1u << (id & 31);
    }
  }
}

void ConstraintMasks::Wait() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return done_; });
}

absl::Status ConstraintMasks::Apply(Tensor logits) {
  if (rows_.empty()) return absl::OkStatus();
  Wait();
  const int64_t m = static_cast<int64_t>(rows_.size());
  if (m > max_seqs_ || logits.dim(1) != vocab_) {
    return absl::InternalError("constraint masks do not fit the step's logits");
  }
  // One copy: the row list, then the masks.
  staging_.resize(size_t(m) * (1 + words_));
  std::memcpy(staging_.data(), rows_.data(), size_t(m) * 4);
  std::memcpy(staging_.data() + m, host_.data(), host_.size() * 4);
  void* device = buffer_->data();
  RETURN_IF_ERROR(backend_.CopyToDevice(staging_.data(), staging_.size() * 4, device));
  MaskLogitsParams p;
  p.logits = logits;
  p.rows = Tensor(device, DType::kInt32, {m});
  p.masks = Tensor(static_cast<int32_t*>(device) + m, DType::kInt32, {m, words_});
  return backend_.MaskLogits(p);
}

}  // namespace kvserve
