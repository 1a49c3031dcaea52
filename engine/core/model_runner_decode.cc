// ModelRunner's decode-step preparation: a step whose chunks are all one
// token long is padded to its bucket (decode_buckets.h), its metadata written
// at the bucket's fixed offsets and copied up in one copy (outside any
// recorded graph, so its length may end at the last byte a kernel reads). Rows are ordered sampled-first, so sample_rows is the identity
// and the sampled rows' logits are the first ones; padded rows read token 0
// at position 0, write no K/V (kPadSlot), attend to nothing (context 0) and
// are never sampled.
#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "base/ceil_div.h"
#include "engine/core/model_runner.h"

namespace kvserve {

absl::Status ModelRunner::PrepareDecodeBucket(const ScheduleOutput& schedule, StepResult& result) {
  const int n = static_cast<int>(schedule.chunks.size());
  const DecodeBucketLayout& l = buckets_->For(n);
  bucket_ = static_cast<int>(&l - buckets_->all().data());
  std::vector<const ScheduledChunk*>& rows = step_.decodes;
  for (const ScheduledChunk& c : schedule.chunks) if (c.samples) rows.push_back(&c);
  for (const ScheduledChunk& c : schedule.chunks) if (!c.samples) rows.push_back(&c);

  host_ints_.resize(l.words);  // within the capacity reserved at start-up
  int32_t* h = host_ints_.data();
  const int block_size = cache_.block_size();
  int max_context = 0, last_columns = 0;
  for (int r = 0; r < n; ++r) {
    const ScheduledChunk& c = *rows[r];
    RunnerSequence& seq = *state_->Find(c.seq_id);  // Apply checked it is held
    const int pos = c.start, context = pos + 1;
    const int columns = CeilDiv(context, block_size);
    if (columns > seq.num_blocks) {
      return absl::InternalError(absl::StrCat("sequence ", c.seq_id, "'s blocks do not cover its chunk"));
    }
    const int32_t* block_row = state_->block_table_row(seq.row);
    h[l.token_ids + r] = seq.tokens[pos];
    h[l.positions + r] = pos;
    h[l.slot_mapping + r] = block_row[pos / block_size] * block_size + pos % block_size;
    h[l.context_lens + r] = context;
    // Columns past the context are never read: left as they are.
    std::memcpy(h + l.block_tables + size_t(r) * l.width, block_row, columns * sizeof(int32_t));
    max_context = std::max(max_context, context);
    last_columns = columns;
    if (c.samples) {
      sampling_->Add(state_->NextSamplingRow(seq));
      masks_->Add(sampling_->size() - 1, seq);
      result.seq_ids.push_back(c.seq_id);
    }
  }
  for (int r = n; r < l.size; ++r) {
    h[l.token_ids + r] = 0;
    h[l.positions + r] = 0;
    h[l.slot_mapping + r] = kPadSlot;
    h[l.context_lens + r] = 0;
  }
  for (int r = 0; r < l.size; ++r) h[l.sample_rows + r] = r;

  const int s = static_cast<int>(result.seq_ids.size());
  const int b = l.size;
  int32_t* device = static_cast<int32_t*>(int_buffer_->data());
  StepBatch& batch = batch_;
  batch = StepBatch();
  batch.num_tokens = b;
  batch.num_decode_seqs = b;
  // A recorded graph computes every row's logits and cannot depend on this
  // step's longest context (0: the kernels plan for the table's width);
  // without graphs only the sampled rows' logits are computed.
  batch.num_samples = use_graphs_ ? b : s;
  batch.decode_max_context = use_graphs_ ? 0 : max_context;
  batch.token_ids = Tensor(device + l.token_ids, DType::kInt32, {b});
  batch.positions = Tensor(device + l.positions, DType::kInt32, {b});
  batch.slot_mapping = Tensor(device + l.slot_mapping, DType::kInt32, {b});
  batch.decode_context_lens = Tensor(device + l.context_lens, DType::kInt32, {b});
  batch.decode_block_tables = Tensor(device + l.block_tables, DType::kInt32, {b, l.width});
  batch.sample_rows = Tensor(device + l.sample_rows, DType::kInt32, {batch.num_samples});
  result.num_tokens = n;
  result.padded_batch = b;
  // Up to the last real row's last needed column: padded rows' table rows
  // (context 0) and columns past a context are never read.
  const size_t words = l.block_tables + size_t(n - 1) * l.width + last_columns;
  return backend_.CopyToDevice(h, words * sizeof(int32_t), device);
}

}  // namespace kvserve
