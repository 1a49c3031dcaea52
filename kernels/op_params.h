// Parameters of the ops whose inputs are more than a few tensors.
//
// Shapes use: T tokens in the step, B sequences, H query heads, Hkv KV heads,
// D head dim, V vocabulary. int32 metadata tensors live on the same device as
// the data. All are non-owning views, passed by value.
#pragma once

#include "kernels/tensor.h"

namespace kvserve {

/// slot_mapping value of a padded row (a decode batch padded to its bucket):
/// the row writes no K/V. Any other slot outside the pool is an error.
inline constexpr int32_t kPadSlot = -1;

/// One layer's paged KV cache. A token's slot is `block_id * block_size + offset`.
struct PagedKvCache {
  Tensor k;  // [num_blocks, block_size, Hkv, D]
  Tensor v;  // [num_blocks, block_size, Hkv, D]
  int block_size = 16;
};

struct AttentionShape {
  int num_heads = 0;     // H
  int num_kv_heads = 0;  // Hkv; query head h reads KV head h / (H / Hkv)
  int head_dim = 0;      // D
  float scale = 0.f;     // 1/sqrt(D), applied once to the scores
};

/// Splits the fused QKV projection and applies rotary embeddings to Q and K
/// (rotate-half convention of Hugging Face Llama). With a cache (cache.k not
/// empty), the op also writes each token's rotated K and its V into the
/// paged cache at slot_mapping, as the attention ops otherwise do first: one
/// pass over the new K/V instead of two (the attention ops are then told
/// `kv_written`).
struct RopeSplitParams {
  Tensor qkv;        // [T, (H + 2*Hkv) * D]  q | k | v per token
  Tensor positions;  // [T] int32 absolute position of each token
  Tensor cos_sin;    // [max_positions, D] float32: cos in [:, :D/2], sin in [:, D/2:]
  Tensor q_out;      // [T, H, D]
  Tensor k_out;      // [T, Hkv, D]
  Tensor v_out;      // [T, Hkv, D]
  AttentionShape shape;
  Tensor slot_mapping;  // [T] int32 cache slot of each token (kPadSlot: none); with `cache`
  PagedKvCache cache;   // empty: no cache write
  bool writes_cache() const { return !cache.k.empty(); }
};

/// Causal attention for a packed, variable-length batch of prompt chunks (no
/// padding). Sequence b owns query rows [cu_seqlens_q[b], cu_seqlens_q[b+1]);
/// its chunk holds the last q_len of its context_lens[b] tokens, so query row i
/// sits at position context_lens[b] - q_len + i and attends to keys 0..that
/// position. The op first writes the chunk's K and V into the cache at
/// slot_mapping, then reads every key (earlier chunks too) through the block
/// table.
struct PrefillAttentionParams {
  Tensor q;             // [T, H, D]
  Tensor k;             // [T, Hkv, D] new keys (rotated)
  Tensor v;             // [T, Hkv, D] new values
  Tensor out;           // [T, H, D]
  Tensor cu_seqlens_q;  // [B + 1] int32 prefix sums of the chunk lengths
  Tensor context_lens;  // [B] int32 tokens in the cache once the chunk is written
  Tensor block_tables;  // [B, max_blocks_per_seq] int32
  Tensor slot_mapping;  // [T] int32 cache slot of each new token (kPadSlot: none)
  PagedKvCache cache;
  AttentionShape shape;
  int num_seqs = 0;         // B
  int max_q_len = 0;        // max chunk length (launch sizing)
  int max_context_len = 0;  // max of context_lens (launch sizing)
  bool kv_written = false;  // k and v are in the cache already (RopeSplitQkv wrote them)
};

/// One new query token per sequence (incremental decoding). The op writes the
/// token's K and V at slot_mapping, then the query at position
/// context_lens[b] - 1 attends to keys 0..context_lens[b] - 1 of the cache.
struct DecodeAttentionParams {
  Tensor q;             // [B, H, D]
  Tensor k;             // [B, Hkv, D] the new token's key (rotated)
  Tensor v;             // [B, Hkv, D]
  Tensor out;           // [B, H, D]
  Tensor context_lens;  // [B] int32, including the new token
  Tensor block_tables;  // [B, max_blocks_per_seq] int32
  Tensor slot_mapping;  // [B] int32; kPadSlot for a padded row
  PagedKvCache cache;
  AttentionShape shape;
  int num_seqs = 0;
  int max_context_len = 0;
  bool kv_written = false;  // k and v are in the cache already (RopeSplitQkv wrote them)
};

/// Per-row logit adjustments applied before the sampling rule (penalties and
/// min_new_tokens' banned ids), as sparse lists: row r's entries are
/// [offsets[r], offsets[r + 1]). Each seen entry (id t, count c) changes
/// logit x of t as x' = (x > 0 ? x / rep : x * rep) − freq · c − (c > 0 ? pres : 0);
/// each banned id's logit becomes −∞. Empty tensors (the default): no row has any.
struct LogitAdjustments {
  Tensor repetition_penalty;  // [S] float32 > 0, 1 = off
  Tensor presence_penalty;    // [S] float32
  Tensor frequency_penalty;   // [S] float32
  Tensor seen_offsets;        // [S + 1] int32
  Tensor seen_tokens;         // [N] int32 ids in the prompt or the output, distinct per row
  Tensor seen_counts;         // [N] int32 times generated (0: only in the prompt)
  Tensor banned_offsets;      // [S + 1] int32
  Tensor banned_tokens;       // [M] int32
  // [N + M] float32 scratch: the adjusted entries' values from before (seen,
  // then banned), from which a backend may read the sampled token's raw logit.
  Tensor saved_logits;
  bool active() const { return !seen_offsets.empty(); }
};

/// Log-probabilities of the raw logits (log_softmax of `logits` as given,
/// before adjustments and temperature), for rows with top_n[r] >= 0.
/// Alternatives are ordered by logit descending, ties lower id first. Empty
/// tensors (the default): no row wants them.
struct LogprobOutputs {
  Tensor top_n;          // [S] int32: -1 = none, else 0..K alternatives
  Tensor token_logprob;  // [S] float32: the sampled token's
  Tensor top_ids;        // [S, K] int32; row r fills its first top_n[r]
  Tensor top_logprobs;   // [S, K] float32
  bool active() const { return !top_n.empty(); }
};

/// Picks one token per row. First the adjustments (which overwrite the
/// adjusted entries of `logits` in place, after the raw log-probabilities
/// have been taken). Candidates are the top_k largest logits when top_k > 0
/// (else all), ordered by logit descending (ties: lower id first) when top_k
/// or top_p is active; top_p keeps the shortest prefix of that order whose
/// probability reaches top_p; min_p then keeps those whose probability is at
/// least min_p times the most likely token's (a prefix of the order when the
/// order is used, else a subset walked in id order). The token is where the
/// cumulative probability first exceeds uniform * total. temperature 0 =
/// argmax (lowest id on ties), and uniform is ignored.
/// Structured outputs: each listed row may draw only the tokens whose bit is
/// set in its mask (bit v of word v / 32, least significant first); the
/// others' logits become −∞. Run before Sample, so that the sampler's
/// log-probabilities are of the allowed tokens.
struct MaskLogitsParams {
  Tensor logits;  // [S, V] float32, changed in place
  Tensor rows;    // [M] int32: the logits row each mask applies to
  Tensor masks;   // [M, ceil(V / 32)] int32 (bit words)
};

struct SampleParams {
  Tensor logits;       // [S, V] float32
  Tensor temperature;  // [S] float32
  Tensor top_k;        // [S] int32, 0 = off
  Tensor top_p;        // [S] float32 in (0, 1]
  Tensor min_p;        // [S] float32 in [0, 1], 0 = off; empty: off for every row
  Tensor uniform;      // [S] float32 in [0, 1), drawn from each request's seeded RNG
  Tensor out_tokens;   // [S] int32
  LogitAdjustments adjust;
  LogprobOutputs logprobs;
  int num_rows = 0;    // S
};

}  // namespace kvserve
