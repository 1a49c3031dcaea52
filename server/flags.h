// Command-line flags of the kvserve server.
#pragma once

#include <string>

#include "absl/flags/declare.h"

ABSL_DECLARE_FLAG(std::string, model);
ABSL_DECLARE_FLAG(std::string, chat_template);
ABSL_DECLARE_FLAG(std::string, tool_call_parser);
ABSL_DECLARE_FLAG(std::string, host);
ABSL_DECLARE_FLAG(int, port);
ABSL_DECLARE_FLAG(int, metrics_port);
ABSL_DECLARE_FLAG(std::string, metrics_host);
ABSL_DECLARE_FLAG(std::string, device);
ABSL_DECLARE_FLAG(std::string, dtype);
ABSL_DECLARE_FLAG(std::string, cpu_activations);
ABSL_DECLARE_FLAG(int, max_num_seqs);
ABSL_DECLARE_FLAG(int, max_num_batched_tokens);
ABSL_DECLARE_FLAG(int, block_size);
ABSL_DECLARE_FLAG(int, num_kv_blocks);
ABSL_DECLARE_FLAG(bool, enable_prefix_caching);
ABSL_DECLARE_FLAG(int, kv_cache_memory_mb);
ABSL_DECLARE_FLAG(double, gpu_memory_utilization);
ABSL_DECLARE_FLAG(bool, cuda_graphs);
ABSL_DECLARE_FLAG(std::string, cuda_fast_kernels);
ABSL_DECLARE_FLAG(bool, cuda_tune_gemms);
ABSL_DECLARE_FLAG(int, max_queued_requests);
ABSL_DECLARE_FLAG(int, default_max_new_tokens);
ABSL_DECLARE_FLAG(int, max_unsent_tokens);
ABSL_DECLARE_FLAG(int, max_constraint_bytes);
ABSL_DECLARE_FLAG(int, max_constraint_compile_ms);
ABSL_DECLARE_FLAG(double, max_stall_s);
ABSL_DECLARE_FLAG(double, shutdown_grace_s);
ABSL_DECLARE_FLAG(std::string, tls_cert);
ABSL_DECLARE_FLAG(std::string, tls_key);
ABSL_DECLARE_FLAG(std::string, log_level);
ABSL_DECLARE_FLAG(double, log_stats_interval_s);
ABSL_DECLARE_FLAG(bool, log_prompts);
