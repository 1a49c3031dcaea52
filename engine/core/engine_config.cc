#include "engine/core/engine_config.h"

#include "absl/strings/str_cat.h"

namespace kvserve {

absl::Status EngineConfig::Validate() const {
  auto bad = [](absl::string_view flag, absl::string_view limit, auto value) {
    return absl::InvalidArgumentError(absl::StrCat("--", flag, " must be ", limit, ", got ", value));
  };
  if (max_num_seqs < 1 || max_num_seqs > 4096) return bad("max_num_seqs", "in [1, 4096]", max_num_seqs);
  if (constraints.max_bytes < 1 || constraints.max_bytes > (size_t(64) << 20)) {
    return bad("max_constraint_bytes", "in [1, 67108864]",
               static_cast<int64_t>(constraints.max_bytes));
  }
  if (constraints.max_compile_time.count() < 1 || constraints.max_compile_time.count() > 600000) {
    return bad("max_constraint_compile_ms", "in [1, 600000]",
               constraints.max_compile_time.count());
  }
  if (max_num_batched_tokens < max_num_seqs || max_num_batched_tokens > (1 << 20)) {
    return bad("max_num_batched_tokens", absl::StrCat("in [max_num_seqs = ", max_num_seqs, ", 2^20]"),
               max_num_batched_tokens);
  }
  if (block_size != 8 && block_size != 16 && block_size != 32 && block_size != 64) {
    return bad("block_size", "8, 16, 32 or 64", block_size);
  }
  if (num_kv_blocks < 0) return bad("num_kv_blocks", ">= 0 (0 = automatic)", num_kv_blocks);
  if (!(gpu_memory_utilization > 0 && gpu_memory_utilization <= 1)) {
    return bad("gpu_memory_utilization", "in (0, 1]", gpu_memory_utilization);
  }
  if (max_queued_requests < 0) return bad("max_queued_requests", ">= 0", max_queued_requests);
  if (default_max_new_tokens < 1) return bad("default_max_new_tokens", ">= 1", default_max_new_tokens);
  if (max_unsent_tokens < 0 || max_unsent_tokens > (1 << 20)) {
    return bad("max_unsent_tokens", "in [0, 2^20] (0 = unlimited)", max_unsent_tokens);
  }
  if (!(max_stall_s >= 0 && max_stall_s <= 86400)) {
    return bad("max_stall_s", "in [0, 86400] (0 = never)", max_stall_s);
  }
  if (admission_reserve_fraction < 0 || admission_reserve_fraction >= 1) {
    return bad("admission_reserve_fraction", "in [0, 1)", admission_reserve_fraction);
  }
  return absl::OkStatus();
}

}  // namespace kvserve
