#include "server/flag_groups.h"

namespace kvserve {

std::vector<FlagGroup> ServerFlagGroups() {
  // A new flag that no entry names is listed under "Other": add it here.
  return {
      {"Model", {"model", "chat_template", "tool_call_parser", "served_model_name"}},
      {"gRPC API", {"host", "port", "shutdown_grace_s"}},
      {"HTTP API (OpenAI-compatible)", {"http_*"}},
      {"Metrics", {"metrics_port", "metrics_host"}},
      {"Authentication and TLS", {"auth_*", "tls_*"}},
      {"Device", {"device", "dtype", "cpu_activations", "gpu_memory_utilization", "cuda_*"}},
      {"Engine and KV cache",
       {"max_num_seqs", "max_num_batched_tokens", "block_size", "num_kv_blocks",
        "kv_cache_memory_mb", "enable_prefix_caching", "max_queued_requests",
        "default_max_new_tokens", "max_unsent_tokens", "max_stall_s",
        "max_constraint_bytes", "max_constraint_compile_ms"}},
      {"gRPC connection limits (docs/limits.md)", {"grpc_*", "malloc_trim_interval_s"}},
      {"Logging", {"log_*"}},
  };
}

}  // namespace kvserve
