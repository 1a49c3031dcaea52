// One engine step's inputs on the device: the packed tokens of every
// scheduled chunk (prefill chunks first, then one-token decodes) and the
// metadata the attention ops need. Built by the ModelRunner.
#pragma once

#include "kernels/tensor.h"

namespace kvserve {

struct StepBatch {
  int num_tokens = 0;          // T
  int num_prefill_tokens = 0;  // rows [0, Tp) are prefill chunks; [Tp, T) decodes
  int num_prefill_seqs = 0;    // Bp
  int num_decode_seqs = 0;     // Bd = T - Tp
  int num_samples = 0;         // S

  Tensor token_ids;     // [T] int32
  Tensor positions;     // [T] int32
  Tensor slot_mapping;  // [T] int32

  Tensor prefill_cu_seqlens;    // [Bp + 1] int32
  Tensor prefill_context_lens;  // [Bp] int32
  Tensor prefill_block_tables;  // [Bp, max_blocks_per_seq] int32
  int prefill_max_q_len = 0;
  int prefill_max_context = 0;

  Tensor decode_context_lens;  // [Bd] int32
  Tensor decode_block_tables;  // [Bd, max_blocks_per_seq] int32
  int decode_max_context = 0;

  Tensor sample_rows;  // [S] int32: rows of T whose logits are computed
};

}  // namespace kvserve
