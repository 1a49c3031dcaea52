#include "engine/core/runner_state.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace kvserve {
namespace {

float UniformFloat(std::mt19937_64& rng) {
  return static_cast<float>(rng() >> 40) * (1.0f / 16777216.0f);  // 24 bits: [0, 1)
}

}  // namespace

RunnerState::RunnerState(int max_seqs, int max_blocks_per_seq)
    : width_(max_blocks_per_seq),
      rows_(max_seqs),
      block_table_(size_t(max_seqs) * max_blocks_per_seq, 0) {
  for (int r = max_seqs - 1; r >= 0; --r) free_rows_.push_back(r);
  index_.reserve(max_seqs);
}

RunnerSequence* RunnerState::Find(SeqId id) {
  auto it = index_.find(id);
  return it == index_.end() ? nullptr : &rows_[it->second];
}

const RunnerSequence* RunnerState::Find(SeqId id) const {
  auto it = index_.find(id);
  return it == index_.end() ? nullptr : &rows_[it->second];
}

absl::Span<const int32_t> RunnerState::BlockIds(const RunnerSequence& seq) const {
  return absl::MakeConstSpan(block_table_row(seq.row), seq.num_blocks);
}

std::vector<SeqId> RunnerState::sequence_ids() const {
  std::vector<SeqId> ids;
  for (const auto& [id, row] : index_) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  return ids;
}

void RunnerState::Drop(SeqId id) {
  auto it = index_.find(id);
  if (it == index_.end()) return;  // e.g. aborted after a failed step it never applied
  const int row = it->second;
  std::fill_n(&block_table_[size_t(row) * width_], rows_[row].num_blocks, 0);
  rows_[row].tokens.clear();  // keeps its capacity for the row's next sequence
  rows_[row].counts = TokenCounts();
  free_rows_.push_back(row);
  index_.erase(it);
}

absl::Status RunnerState::AppendBlocks(RunnerSequence& seq, absl::Span<const int32_t> ids) {
  if (seq.num_blocks + static_cast<int>(ids.size()) > width_) {
    return absl::InternalError(absl::StrCat("sequence ", seq.seq_id, " would hold ",
                                            seq.num_blocks + ids.size(),
                                            " blocks, more than max_blocks_per_seq ", width_));
  }
  std::copy(ids.begin(), ids.end(), &block_table_[size_t(seq.row) * width_ + seq.num_blocks]);
  seq.num_blocks += static_cast<int>(ids.size());
  return absl::OkStatus();
}

absl::Status RunnerState::Add(const NewSequenceData& d) {
  if (index_.contains(d.seq_id)) {
    return absl::InternalError(absl::StrCat("new sequence ", d.seq_id, " is held already"));
  }
  if (free_rows_.empty()) {
    return absl::InternalError(absl::StrCat("no free row for sequence ", d.seq_id, ": ",
                                            rows_.size(), " held (max_num_seqs)"));
  }
  const int row = free_rows_.back();
  free_rows_.pop_back();
  index_.emplace(d.seq_id, row);
  RunnerSequence& seq = rows_[row];
  seq.seq_id = d.seq_id;
  seq.row = row;
  seq.tokens.assign(d.tokens.begin(), d.tokens.end());
  seq.prompt_len = d.prompt_len;
  seq.num_computed = d.num_computed;
  seq.num_blocks = 0;
  seq.sampling = d.sampling;
  seq.matcher = {};
  if (seq.sampling.constraint != nullptr) {
    seq.matcher.constraint = seq.sampling.constraint;
    seq.matcher.state = seq.matcher.constraint->Start();
  }
  // The generator as it stands after the tokens generated so far (resumed
  // after preemption: one draw per generated token).
  seq.rng.seed(d.sampling.seed);
  seq.rng.discard(static_cast<unsigned long long>(std::max(seq.num_generated(), 0)));
  const SamplingOptions& o = d.sampling.options;
  if (o.repetition_penalty != 1.f) {
    seq.counts.AddPrompt(absl::MakeConstSpan(seq.tokens.data(), seq.prompt_len));
  }
  if (o.has_penalties()) {
    for (size_t i = seq.prompt_len; i < seq.tokens.size(); ++i) seq.counts.AddGenerated(seq.tokens[i]);
  }
  return AppendBlocks(seq, d.block_ids);
}

absl::Status RunnerState::Update(const CachedSequenceData& d, int i) {
  RunnerSequence* seq = Find(d.seq_ids[i]);
  if (seq == nullptr) {
    return absl::InternalError(absl::StrCat("update for sequence ", d.seq_ids[i], " the runner does not hold"));
  }
  for (int32_t token : d.NewTokens(i)) {
    seq->tokens.push_back(token);
    if (seq->sampling.options.has_penalties()) seq->counts.AddGenerated(token);
  }
  seq->num_computed = d.num_computed[i];
  return AppendBlocks(*seq, d.NewBlocks(i));
}

absl::Status RunnerState::Apply(const ScheduleOutput& s) {
  for (SeqId id : s.finished) Drop(id);
  for (SeqId id : s.preempted) Drop(id);
  for (const NewSequenceData& d : s.new_seqs) RETURN_IF_ERROR(Add(d));
  for (int i = 0; i < s.cached_seqs.size(); ++i) RETURN_IF_ERROR(Update(s.cached_seqs, i));
  for (const ScheduledChunk& c : s.chunks) {
    RunnerSequence* seq = Find(c.seq_id);
    if (seq == nullptr) {
      return absl::InternalError(absl::StrCat("scheduled sequence ", c.seq_id, " the runner does not hold"));
    }
    const int end = c.start + c.num_tokens;
    if (c.start != seq->num_computed || end > static_cast<int>(seq->tokens.size()) ||
        c.samples != (end == static_cast<int>(seq->tokens.size()))) {
      return absl::InternalError(absl::StrCat(
          "chunk [", c.start, ", ", end, ") of sequence ", c.seq_id, " does not follow its ",
          seq->num_computed, " computed of ", seq->tokens.size(), " tokens"));
    }
    seq->num_computed = end;
  }
  return absl::OkStatus();
}

SamplingRow RunnerState::NextSamplingRow(RunnerSequence& seq) {
  const SamplingOptions& s = seq.sampling.options;
  SamplingRow row;
  row.temperature = s.temperature;
  row.top_k = s.top_k;
  row.top_p = s.top_p;
  row.min_p = s.min_p;
  row.uniform = UniformFloat(seq.rng);  // one draw per token, whatever the options
  if (s.has_penalties()) {
    row.repetition_penalty = s.repetition_penalty;
    row.presence_penalty = s.presence_penalty;
    row.frequency_penalty = s.frequency_penalty;
    row.seen_tokens = seq.counts.tokens();
    row.seen_counts = seq.counts.counts();
  }
  if (seq.num_generated() < static_cast<int>(s.min_new_tokens)) row.banned_tokens = seq.sampling.banned_tokens;
  row.top_logprobs = s.logprobs ? static_cast<int32_t>(*s.logprobs) : -1;
  row.capture_logits = seq.sampling.capture_logits;
  return row;
}

}  // namespace kvserve
