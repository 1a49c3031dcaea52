// The fixed shapes a decode step is padded to, so that each shape's step
// metadata sits at fixed offsets in one buffer allocated at start-up and the
// model's ops see the same pointers and sizes every time (what a captured
// CUDA graph replays). Batch sizes: 1, 2, 4, 8, then every multiple of 8 up
// to max_seqs (always included): at most 7 padded rows past 8, so padding
// costs the CPU backend little. The block table is max_blocks_per_seq wide
// (max_model_len's worth) whatever the step's longest context.
#pragma once

#include <cstddef>
#include <vector>

namespace kvserve {

/// One bucket's metadata, in int32 words from the start of the step buffer.
/// Every array is sized for `size` rows; padded rows are masked (kPadSlot,
/// context 0) and never sampled.
struct DecodeBucketLayout {
  int size = 0;   // B: rows
  int width = 0;  // W: block-table columns
  size_t token_ids = 0;     // [B]
  size_t positions = 0;     // [B]
  size_t slot_mapping = 0;  // [B]
  size_t context_lens = 0;  // [B]
  size_t sample_rows = 0;   // [B] (the sampled rows come first)
  size_t block_tables = 0;  // [B, W]
  size_t words = 0;         // the whole layout
};

class DecodeBuckets {
 public:
  DecodeBuckets(int max_seqs, int max_blocks_per_seq);

  /// The smallest bucket that holds `num_seqs` rows (1 ≤ num_seqs ≤ max_seqs).
  const DecodeBucketLayout& For(int num_seqs) const;
  const std::vector<DecodeBucketLayout>& all() const { return buckets_; }
  /// Words of the largest bucket: what the step buffer must hold.
  size_t max_words() const { return buckets_.back().words; }

 private:
  std::vector<DecodeBucketLayout> buckets_;  // ascending size
  std::vector<int> bucket_of_;               // [max_seqs + 1]: num_seqs → index
};

}  // namespace kvserve
