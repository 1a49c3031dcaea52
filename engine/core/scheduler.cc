#include "engine/core/scheduler.h"

#include <algorithm>

#include "base/logging.h"

namespace kvserve {

Scheduler::Scheduler(const SchedulerConfig& config, BlockManager& blocks)
    : config_(config), blocks_(blocks) {
  KV_CHECK(config.max_num_seqs > 0 && config.max_num_batched_tokens >= config.max_num_seqs)
      << "max_num_batched_tokens must cover one decode per running sequence";
}

void Scheduler::Add(std::unique_ptr<Sequence> seq) {
  KV_CHECK(seq->num_tokens() > 0) << "empty sequence";
  const SeqId id = seq->id;
  seq->status = SequenceStatus::kWaiting;
  KV_CHECK(seqs_.emplace(id, std::move(seq)).second) << "duplicate sequence id " << id;
  waiting_.push_back(id);
}

Sequence* Scheduler::Get(SeqId id) {
  auto it = seqs_.find(id);
  return it == seqs_.end() ? nullptr : it->second.get();
}

const Sequence* Scheduler::Get(SeqId id) const {
  auto it = seqs_.find(id);
  return it == seqs_.end() ? nullptr : it->second.get();
}

void Scheduler::InsertWaitingInArrivalOrder(SeqId id) {
  waiting_.insert(std::upper_bound(waiting_.begin(), waiting_.end(), id), id);
}

void Scheduler::Preempt(SeqId id, ScheduleOutput& out) {
  Sequence& seq = *seqs_.at(id);
  blocks_.Free(seq.block_table);
  seq.num_computed = 0;
  seq.num_cached_blocks = 0;
  seq.num_tokens_sent = seq.num_blocks_sent = 0;  // the runner drops it
  seq.status = SequenceStatus::kWaiting;  // num_preemptions says it ran before
  ++seq.num_preemptions;
  running_.erase(std::find(running_.begin(), running_.end(), id));
  InsertWaitingInArrivalOrder(id);
  out.preempted.push_back(id);
}

void Scheduler::CacheComputedBlocks(Sequence& seq) {
  if (!blocks_.prefix_caching()) return;
  ExtendBlockHashes(seq.tokens, blocks_.block_size(), seq.block_hashes);
  seq.num_cached_blocks = blocks_.CacheFullBlocks(seq.block_table, seq.tokens, seq.block_hashes,
                                                  seq.num_cached_blocks, seq.num_computed);
}

ScheduleOutput Scheduler::Schedule() {
  ScheduleOutput out;
  out.finished.swap(finished_);
  scheduled_.clear();
  // The previous step ran: what it computed may now be shared.
  for (SeqId id : running_) CacheComputedBlocks(*seqs_.at(id));
  int budget = config_.max_num_batched_tokens;
  const int block_size = blocks_.block_size();

  // Decodes not yet scheduled in this pass: prefill chunks leave room for them.
  int pending_decodes = 0;
  for (SeqId id : running_) {
    const Sequence& seq = *seqs_.at(id);
    pending_decodes += !seq.paused && seq.num_uncomputed() == 1;
  }

  // 1. Running sequences, oldest first. Victims are paused sequences (never
  //    scheduled) or come off the back, which this loop has not reached yet
  //    (or is at), so no scheduled chunk is revoked.
  for (size_t i = 0; i < running_.size(); ++i) {
    Sequence& seq = *seqs_.at(running_[i]);
    if (seq.paused) continue;  // its client is not reading: keep its blocks, compute nothing
    const int uncomputed = seq.num_uncomputed();
    const bool is_decode = uncomputed == 1;
    if (is_decode) --pending_decodes;
    int n = is_decode ? 1 : std::min(uncomputed, budget - pending_decodes);
    if (n <= 0) continue;  // no budget left for this prompt chunk this step

    bool self_preempted = false;
    while (!blocks_.CanAppend(seq.block_table, seq.num_computed + n)) {
      // A prompt chunk can shrink to the room its blocks and the free list give.
      const int room = (static_cast<int>(seq.block_table.size()) + blocks_.num_free_blocks()) *
                           block_size - seq.num_computed;
      if (!is_decode && room > 0) {
        n = std::min(n, room);
        break;
      }
      const auto paused = NewestPaused();
      const SeqId victim = paused != running_.rend() ? *paused : running_.back();
      const size_t victim_index =
          std::find(running_.begin(), running_.end(), victim) - running_.begin();
      const Sequence& v = *seqs_.at(victim);
      if (!v.paused && v.num_uncomputed() == 1 && victim != seq.id) --pending_decodes;
      Preempt(victim, out);
      if (victim == seq.id) {
        self_preempted = true;
        break;
      }
      if (victim_index < i) --i;  // running_[i] is still `seq`
    }
    if (self_preempted) break;  // it was the last running sequence
    blocks_.Append(seq.block_table, seq.num_computed + n);
    out.chunks.push_back({seq.id, seq.num_computed, n, seq.num_computed + n == seq.num_tokens()});
    scheduled_.push_back(&seq);
    seq.num_computed += n;
    budget -= n;
  }

  // 2. Admit waiting sequences in arrival order; never skip one (no
  //    starvation) except a paused one, which would only compute a token
  //    its client does not read.
  if (out.preempted.empty()) {
    // By index: a preemption in TryAdmit inserts into waiting_.
    size_t i = 0;
    while (i < waiting_.size() && static_cast<int>(running_.size()) < config_.max_num_seqs &&
           budget > 0) {
      const SeqId id = waiting_[i];
      Sequence& seq = *seqs_.at(id);
      if (seq.paused) {
        ++i;
        continue;
      }
      if (!TryAdmit(seq, budget, out)) break;
      waiting_.erase(std::find(waiting_.begin(), waiting_.end(), id));
      i = 0;
    }
  }
  out.num_batched_tokens = config_.max_num_batched_tokens - budget;
  DescribeForRunner(out);
  return out;
}

bool Scheduler::TryAdmit(Sequence& seq, int& budget, ScheduleOutput& out) {
  if (blocks_.prefix_caching()) {
    ExtendBlockHashes(seq.tokens, blocks_.block_size(), seq.block_hashes);
  }
  PrefixHit hit;
  int cached = 0;
  int n = 0;
  for (;;) {
    // Leaves at least the last token to compute, so n >= 1.
    hit = blocks_.FindCachedPrefix(seq.tokens, seq.block_hashes);
    cached = static_cast<int>(hit.blocks.size()) * blocks_.block_size();
    n = std::min(seq.num_tokens() - cached, budget);
    // The reserve only matters while others run: alone, a sequence may use it all.
    const int reserve = running_.empty() ? 0 : config_.admission_reserve_blocks;
    if (blocks_.CanAllocate(cached + n, reserve, hit)) break;
    // Paused sequences hold blocks but make no progress: under memory
    // pressure they give way like any running sequence would, newest first.
    const auto paused = NewestPaused();
    if (paused == running_.rend()) return false;
    Preempt(*paused, out);
  }
  blocks_.Allocate(seq.block_table, cached + n, hit);
  seq.num_cached_blocks = static_cast<int>(hit.blocks.size());
  running_.push_back(seq.id);
  seq.status = SequenceStatus::kRunning;
  out.admitted.push_back(seq.id);
  out.chunks.push_back({seq.id, cached, n, cached + n == seq.num_tokens()});
  scheduled_.push_back(&seq);
  seq.num_computed = cached + n;
  budget -= n;
  if (blocks_.prefix_caching()) {
    out.prefix_cache_queried_tokens += seq.num_tokens();
    out.prefix_cache_hit_tokens += cached;
  }
  return true;
}

std::vector<SeqId>::const_reverse_iterator Scheduler::NewestPaused() const {
  return std::find_if(running_.rbegin(), running_.rend(),
                      [&](SeqId id) { return seqs_.at(id)->paused; });
}

bool Scheduler::HasRunnableWork() const {
  auto runnable = [&](SeqId id) { return !seqs_.at(id)->paused; };
  return std::any_of(running_.begin(), running_.end(), runnable) ||
         std::any_of(waiting_.begin(), waiting_.end(), runnable);
}

void Scheduler::DescribeForRunner(ScheduleOutput& out) {
  CachedSequenceData& cached = out.cached_seqs;
  for (auto* v : {&cached.num_computed, &cached.token_offsets, &cached.new_token_ids,
                  &cached.block_offsets, &cached.new_block_ids}) {
    v->reserve(out.chunks.size() + 1);
  }
  cached.seq_ids.reserve(out.chunks.size());
  for (size_t i = 0; i < out.chunks.size(); ++i) {
    const ScheduledChunk& c = out.chunks[i];
    Sequence& seq = *scheduled_[i];  // the chunk's sequence, without a second lookup
    if (seq.num_tokens_sent == 0) {
      NewSequenceData& d = out.new_seqs.emplace_back();
      d.seq_id = seq.id;
      d.tokens = seq.tokens;
      d.prompt_len = seq.prompt_len;
      d.block_ids = seq.block_table;
      d.num_computed = c.start;
      d.sampling = seq.sampling;
    } else {
      cached.Add(seq.id, c.start, seq.tokens.begin() + seq.num_tokens_sent, seq.tokens.end(),
                 seq.block_table.begin() + seq.num_blocks_sent, seq.block_table.end());
    }
    seq.num_tokens_sent = seq.num_tokens();
    seq.num_blocks_sent = static_cast<int>(seq.block_table.size());
  }
}

void Scheduler::AppendToken(SeqId id, int32_t token) {
  Sequence& seq = *seqs_.at(id);
  KV_CHECK(seq.status == SequenceStatus::kRunning && seq.num_uncomputed() == 0)
      << "token for sequence " << id << " that did not sample";
  CacheComputedBlocks(seq);  // before it may finish and free them
  seq.tokens.push_back(token);
}

void Scheduler::Remove(SeqId id) {
  auto it = seqs_.find(id);
  if (it == seqs_.end()) return;
  Sequence& seq = *it->second;
  if (seq.num_tokens_sent > 0) finished_.push_back(id);  // the runner holds it
  blocks_.Free(seq.block_table);
  if (auto r = std::find(running_.begin(), running_.end(), id); r != running_.end()) running_.erase(r);
  if (auto w = std::find(waiting_.begin(), waiting_.end(), id); w != waiting_.end()) waiting_.erase(w);
  seqs_.erase(it);
}

}  // namespace kvserve
