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

void ConstraintMasks::Clear() {
  rows_.clear();
  host_.clear();
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
  host_.resize(host_.size() + words_, 0u);
  uint32_t* mask = host_.data() + host_.size() - words_;
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
      staging_.assign(m.constraint->vocabulary().mask_words(), 0u);
      m.constraint->OrMask(m.state, staging_.data());
      std::memcpy(mask, staging_.data(), size_t(words) * 4);
    }
    allow_end = m.constraint->Accepting(m.state) ||
                std::all_of(mask, mask + words_, [](uint32_t w) { return w == 0; });
  }
  if (!alive) ++dead_rows_;
  if (allow_end) {
    for (int32_t id : seq.sampling.end_tokens) {
      if (id >= 0 && id < vocab_) mask[id >> 5] |= 1u << (id & 31);
    }
  }
}

absl::Status ConstraintMasks::Apply(Tensor logits) {
  if (rows_.empty()) return absl::OkStatus();
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
