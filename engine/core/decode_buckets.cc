#include "engine/core/decode_buckets.h"

#include "base/logging.h"

namespace kvserve {
namespace {

DecodeBucketLayout Layout(int b, int width) {
  DecodeBucketLayout l;
  l.size = b;
  l.width = width;
  size_t at = 0;
  for (size_t* field : {&l.token_ids, &l.positions, &l.slot_mapping, &l.context_lens, &l.sample_rows}) {
    *field = at;
    at += b;
  }
  l.block_tables = at;
  l.words = at + size_t(b) * width;
  return l;
}

}  // namespace

DecodeBuckets::DecodeBuckets(int max_seqs, int max_blocks_per_seq) {
  KV_CHECK(max_seqs > 0 && max_blocks_per_seq > 0) << "empty decode buckets";
  std::vector<int> sizes;
  for (int b = 1; b < 8 && b < max_seqs; b *= 2) sizes.push_back(b);
  for (int b = 8; b < max_seqs; b += 8) sizes.push_back(b);
  sizes.push_back(max_seqs);
  bucket_of_.assign(max_seqs + 1, 0);
  for (int n = max_seqs, i = static_cast<int>(sizes.size()) - 1; n >= 1; --n) {
    if (i > 0 && sizes[i - 1] >= n) --i;
    bucket_of_[n] = i;
  }
  for (int b : sizes) buckets_.push_back(Layout(b, max_blocks_per_seq));
}

const DecodeBucketLayout& DecodeBuckets::For(int num_seqs) const {
  KV_CHECK(num_seqs >= 1 && num_seqs < static_cast<int>(bucket_of_.size()))
      << "decode batch of " << num_seqs << " has no bucket";
  return buckets_[bucket_of_[num_seqs]];
}

}  // namespace kvserve
