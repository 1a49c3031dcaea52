#include "engine/core/model_runner.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "base/ceil_div.h"

namespace kvserve {
namespace {

// Appends int32 arrays into one host vector and hands out device views at
// the same offsets, so that one copy moves all of them.
class IntPacker {
 public:
  IntPacker(std::vector<int32_t>& host, void* device) : host_(host), device_(device) { host_.clear(); }
  Tensor Add(const std::vector<int32_t>& values, std::initializer_list<int64_t> shape) {
    Tensor t(static_cast<int32_t*>(device_) + host_.size(), DType::kInt32, shape);
    host_.insert(host_.end(), values.begin(), values.end());
    return t;
  }

 private:
  std::vector<int32_t>& host_;
  void* device_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<ModelRunner>> ModelRunner::Create(Backend& backend,
                                                                 Model& model, KvCache& cache,
                                                                 int max_tokens, int max_seqs) {
  std::unique_ptr<ModelRunner> runner(new ModelRunner(backend, model, cache));
  runner->max_tokens_ = max_tokens;
  runner->max_seqs_ = max_seqs;
  runner->max_blocks_per_seq_ = CeilDiv(model.config().max_context, cache.block_size());
  // tokens, positions, slots; cu_seqlens, 2 × context lens, 2 × block tables;
  // sample rows.
  const size_t ints = 3 * size_t(max_tokens) + 3 * size_t(max_seqs) + 1 +
                      2 * size_t(max_seqs) * runner->max_blocks_per_seq_ + size_t(max_seqs);
  ASSIGN_OR_RETURN(runner->int_buffer_, backend.Allocate(ints * sizeof(int32_t)));
  runner->host_ints_.reserve(ints);
  ASSIGN_OR_RETURN(runner->sampling_, SamplingBatch::Create(backend, max_seqs));
  ASSIGN_OR_RETURN(runner->masks_,
                   ConstraintMasks::Create(backend, max_seqs, model.config().vocab_size));
  runner->state_ = std::make_unique<RunnerState>(max_seqs, runner->max_blocks_per_seq_);
  // Every bucket's layout starts at the buffer's start: steps never overlap,
  // and the packed layout above is at least as large as the largest bucket.
  runner->buckets_ = std::make_unique<DecodeBuckets>(std::min(max_seqs, max_tokens),
                                                     runner->max_blocks_per_seq_);
  if (runner->buckets_->max_words() > ints) {
    return absl::InternalError("the largest decode bucket does not fit the step buffer");
  }
  runner->use_graphs_ = backend.SupportsGraphs();
  runner->graphs_.resize(runner->buckets_->all().size());
  return runner;
}

void ModelRunner::HostStep::Clear() {
  for (auto* v : {&prefills, &decodes, &ordered}) v->clear();
  for (auto* v : {&tokens, &positions, &slots, &cu, &p_ctx, &d_ctx, &p_tables, &d_tables,
                  &sample_rows}) {
    v->clear();
  }
}

absl::StatusOr<StepResult> ModelRunner::Run(const ScheduleOutput& schedule) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  StepResult result;
  masks_->Wait();  // a failed step may have left it building (it reads sequences)
  RETURN_IF_ERROR(PrepareInputs(schedule, result));
  masks_->Start();  // structured outputs' masks, built while the forward runs
  const Clock::time_point prepared = Clock::now();
  result.times.prepare = prepared - start;
  ASSIGN_OR_RETURN(Tensor logits, Execute());
  const Clock::time_point executed = Clock::now();
  result.times.execute = executed - prepared;
  if (result.seq_ids.empty()) {
    // No sampled ids to copy back, so nothing below would wait for the step.
    // On an asynchronous backend a kernel's data error (bad block id, slot)
    // surfaces at the next synchronization: take it here, so that it fails
    // this step's requests and not the next step's.
    RETURN_IF_ERROR(backend_.Synchronize());
    return result;
  }
  // A graph computes every row's logits; the sampled rows are the first ones.
  ASSIGN_OR_RETURN(const SampleParams sp,
                   Sample(logits.Rows(0, static_cast<int64_t>(result.seq_ids.size())), result));
  RETURN_IF_ERROR(CopyOut(sp, result));
  result.times.sample = Clock::now() - executed;
  return result;
}

absl::StatusOr<Tensor> ModelRunner::Execute() {
  if (!use_graphs_ || bucket_ < 0) return model_.Forward(batch_, cache_);
  BucketGraph& graph = graphs_[bucket_];
  if (!graph.captured) {
    RETURN_IF_ERROR(backend_.BeginCapture(bucket_));
    absl::StatusOr<Tensor> logits = model_.Forward(batch_, cache_);
    const absl::Status ended = backend_.EndCapture(bucket_);  // ends the capture on error too
    RETURN_IF_ERROR(logits.status());
    RETURN_IF_ERROR(ended);
    graph.logits = *logits;
    graph.captured = true;
  }
  RETURN_IF_ERROR(backend_.Replay(bucket_));
  return graph.logits;
}

absl::Status ModelRunner::PrepareInputs(const ScheduleOutput& schedule, StepResult& result) {
  RETURN_IF_ERROR(state_->Apply(schedule));
  step_.Clear();
  sampling_->Clear();
  masks_->Clear();
  bucket_ = -1;
  const bool one_token_chunks =
      std::all_of(schedule.chunks.begin(), schedule.chunks.end(),
                  [](const ScheduledChunk& c) { return c.num_tokens == 1; });
  if (one_token_chunks && !schedule.chunks.empty() &&
      static_cast<int>(schedule.chunks.size()) <= buckets_->all().back().size) {
    return PrepareDecodeBucket(schedule, result);
  }
  return PreparePacked(schedule, result);
}

absl::Status ModelRunner::PreparePacked(const ScheduleOutput& schedule, StepResult& result) {
  auto& [prefills, decodes, ordered, tokens, positions, slots, cu, p_ctx, d_ctx, p_tables,
         d_tables, sample_rows] = step_;
  // Prefill chunks (more than one token) first, then one-token decodes.
  for (const ScheduledChunk& c : schedule.chunks) (c.num_tokens > 1 ? prefills : decodes).push_back(&c);
  ordered.insert(ordered.end(), prefills.begin(), prefills.end());
  ordered.insert(ordered.end(), decodes.begin(), decodes.end());
  cu.push_back(0);

  const int block_size = cache_.block_size();
  int width = 1;  // block-table columns this step
  for (const ScheduledChunk* c : ordered) {
    width = std::max(width, CeilDiv(c->start + c->num_tokens, block_size));
    if (CeilDiv(c->start + c->num_tokens, block_size) > state_->Find(c->seq_id)->num_blocks) {
      return absl::InternalError(absl::StrCat("sequence ", c->seq_id, "'s blocks do not cover its chunk"));
    }
  }
  if (width > max_blocks_per_seq_) {
    return absl::InternalError(absl::StrCat("step needs ", width, " blocks per sequence, more than ",
                                            max_blocks_per_seq_));
  }
  int prefill_tokens = 0, max_q = 0, p_max_ctx = 0, d_max_ctx = 0;
  for (const ScheduledChunk* c : ordered) {
    RunnerSequence* seq = state_->Find(c->seq_id);  // Apply checked it is held
    const int32_t* block_row = state_->block_table_row(seq->row);
    const int context = c->start + c->num_tokens;
    for (int pos = c->start; pos < context; ++pos) {
      tokens.push_back(seq->tokens[pos]);
      positions.push_back(pos);
      slots.push_back(block_row[pos / block_size] * block_size + pos % block_size);
    }
    const bool is_prefill = c->num_tokens > 1;
    std::vector<int32_t>& tables = is_prefill ? p_tables : d_tables;
    tables.insert(tables.end(), block_row, block_row + width);  // unused columns are 0
    if (is_prefill) {
      prefill_tokens += c->num_tokens;
      cu.push_back(prefill_tokens);
      p_ctx.push_back(context);
      max_q = std::max(max_q, c->num_tokens);
      p_max_ctx = std::max(p_max_ctx, context);
    } else {
      d_ctx.push_back(context);
      d_max_ctx = std::max(d_max_ctx, context);
    }
    if (c->samples) {
      sample_rows.push_back(static_cast<int32_t>(tokens.size()) - 1);
      sampling_->Add(state_->NextSamplingRow(*seq));
      masks_->Add(sampling_->size() - 1, *seq);
      result.seq_ids.push_back(c->seq_id);
    }
  }
  const int t = static_cast<int>(tokens.size());
  const int bp = static_cast<int>(prefills.size()), bd = static_cast<int>(decodes.size());
  const int s = static_cast<int>(sample_rows.size());
  if (t > max_tokens_ || bp + bd > max_seqs_ || width > max_blocks_per_seq_) {
    return absl::InternalError(absl::StrCat("step of ", t, " tokens, ", bp + bd,
                                            " sequences exceeds the runner's limits"));
  }

  StepBatch& b = batch_;
  b = StepBatch();
  b.num_tokens = t;
  b.num_prefill_tokens = prefill_tokens;
  b.num_prefill_seqs = bp;
  b.num_decode_seqs = bd;
  b.num_samples = s;
  b.prefill_max_q_len = max_q;
  b.prefill_max_context = p_max_ctx;
  b.decode_max_context = d_max_ctx;
  IntPacker ints(host_ints_, int_buffer_->data());
  b.token_ids = ints.Add(tokens, {t});
  b.positions = ints.Add(positions, {t});
  b.slot_mapping = ints.Add(slots, {t});
  b.prefill_cu_seqlens = ints.Add(cu, {bp + 1});
  b.prefill_context_lens = ints.Add(p_ctx, {bp});
  b.prefill_block_tables = ints.Add(p_tables, {bp, width});
  b.decode_context_lens = ints.Add(d_ctx, {bd});
  b.decode_block_tables = ints.Add(d_tables, {bd, width});
  b.sample_rows = ints.Add(sample_rows, {s});
  result.num_tokens = t;
  return backend_.CopyToDevice(host_ints_.data(), host_ints_.size() * sizeof(int32_t),
                               int_buffer_->data());
}

absl::StatusOr<SampleParams> ModelRunner::Sample(Tensor logits, StepResult& result) {
  const int s = sampling_->size();
  // Captured before Sample, which overwrites penalized entries in place.
  if (sampling_->any_capture()) {
    const int64_t vocab = logits.dim(1);
    result.logits.resize(s);
    for (int i = 0; i < s; ++i) {
      if (!sampling_->capture_logits(i)) continue;
      result.logits[i].resize(vocab);
      RETURN_IF_ERROR(backend_.CopyToHost(logits.Rows(i, 1).data, vocab * sizeof(float),
                                          result.logits[i].data()));
    }
  }
  // Structured outputs: after the capture (raw logits), before the sampler.
  RETURN_IF_ERROR(masks_->Apply(logits));
  ASSIGN_OR_RETURN(const SampleParams sp, sampling_->Upload(logits));
  RETURN_IF_ERROR(backend_.Sample(sp));
  return sp;
}

absl::Status ModelRunner::CopyOut(const SampleParams& params, StepResult& result) {
  return sampling_->Download(params, result.tokens, result.logprobs);
}

}  // namespace kvserve
