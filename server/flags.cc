#include "server/flags.h"

#include "absl/flags/flag.h"

ABSL_FLAG(std::string, model, "",
          "Hugging Face model directory (config.json, *.safetensors, tokenizer.json), or a GGUF "
          "file (path/file.gguf: weights, tokenizer and chat template in one file). Empty: the "
          "built-in default model (random weights, byte tokenizer: its text is noise).");
ABSL_FLAG(std::string, chat_template, "",
          "A Jinja chat template file, used instead of the model's own (tokenizer_config.json, "
          "chat_template.jinja or GGUF metadata) for Chat and ApplyChatTemplate.");
ABSL_FLAG(std::string, tool_call_parser, "auto",
          "How tool calls are read out of the model's text for tool_choice \"auto\": auto (from "
          "the chat template: <tool_call> is hermes, [TOOL_CALLS] is mistral, Llama 3's JSON "
          "calls are llama3_json), llama3_json, hermes, mistral, or none (never parsed).");
ABSL_FLAG(std::string, host, "0.0.0.0", "Address to listen on.");
ABSL_FLAG(int, port, 50051, "gRPC port (0: any free port).");
ABSL_FLAG(int, metrics_port, 9464,
          "Prometheus /metrics HTTP port (0: any free port, -1: no metrics endpoint).");
ABSL_FLAG(std::string, metrics_host, "127.0.0.1",
          "Address the /metrics endpoint listens on (0.0.0.0: every interface). Loopback by "
          "default: the metrics show load and request counts to anyone who can reach them.");
ABSL_FLAG(std::string, device, "auto", "cpu, cuda, or auto (cuda when a GPU is present).");
ABSL_FLAG(std::string, dtype, "auto",
          "Weights and activations on the GPU: float32, bfloat16, float16 or auto (bfloat16). "
          "On the CPU (float32 activations and accumulation), the weight matrices: float32, "
          "bfloat16, or auto (bfloat16 and GGUF block formats Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, "
          "Q2_K, Q3_K, Q4_K, Q5_K, Q6_K kept as stored, read from the mapped file; others "
          "float32).");
ABSL_FLAG(std::string, cpu_activations, "auto",
          "How the CPU multiplies by GGUF block-format weights: auto (activations rounded to "
          "int8 blocks as llama.cpp does, integer dot products) or float32 (the exact path: "
          "Q8_0 multiplied by float32 activations, the other formats dequantized to float32 at "
          "load).");
ABSL_FLAG(int, max_num_seqs, 64, "Sequences running at once.");
ABSL_FLAG(int, max_num_batched_tokens, 1024,
          "Tokens per engine step; long prompts are prefilled in chunks of at most this.");
ABSL_FLAG(int, block_size, 16, "Tokens per KV-cache block (8, 16, 32 or 64).");
ABSL_FLAG(int, num_kv_blocks, 0,
          "KV-cache blocks in the pool. 0: sized from --kv_cache_memory_mb (CPU) or "
          "--gpu_memory_utilization (GPU).");
ABSL_FLAG(bool, enable_prefix_caching, true,
          "Keep the K/V of finished prompts' full blocks and reuse them for requests that start "
          "with the same tokens (--enable_prefix_caching=false: compute every prompt fully).");
ABSL_FLAG(int, kv_cache_memory_mb, 512, "CPU: KV-cache memory when --num_kv_blocks is 0.");
ABSL_FLAG(double, gpu_memory_utilization, 0.9,
          "GPU: fraction of device memory for weights, workspace and KV cache.");
ABSL_FLAG(bool, cuda_graphs, true,
          "GPU: record each decode batch bucket's step as a CUDA graph once and replay it "
          "(one launch per step instead of ~180; docs/cuda.md). --cuda_graphs=false: eager.");
ABSL_FLAG(std::string, cuda_fast_kernels, "all",
          "GPU: which fast kernels may serve, each checked against its reference kernel at "
          "start-up: all, none, or a comma-separated list of flash_decode, prefill_mma, "
          "rope_kv_write, rmsnorm, gemv_small_m, gemv_silu_mul, gemm_skinny_mma, gemv_rmsnorm, "
          "pdl (docs/cuda.md).");
ABSL_FLAG(bool, cuda_tune_gemms, true,
          "GPU: time cuBLASLt's candidate algorithms (and the small-M and skinny kernels) "
          "for every GEMM "
          "shape at start-up and keep the fastest; false: the heuristic's first choice.");
ABSL_FLAG(int, max_queued_requests, 1024,
          "Requests that may wait beyond the running ones; more get RESOURCE_EXHAUSTED.");
ABSL_FLAG(int, default_max_new_tokens, 256,
          "max_new_tokens when a request does not set it (capped by the context left).");
ABSL_FLAG(int, max_unsent_tokens, 256,
          "A stream with this many tokens not yet written to its client is paused (not "
          "scheduled, KV kept) until the client reads; 0 = unlimited (docs/backpressure.md).");
ABSL_FLAG(double, max_stall_s, 60,
          "A stream paused this long (its client reads nothing) ends with RESOURCE_EXHAUSTED "
          "and its KV blocks are freed; 0 = never.");
ABSL_FLAG(int, max_constraint_bytes, 256 * 1024,
          "Structured outputs: the largest JSON schema, regex, grammar or choice list a request "
          "may send; larger ones get RESOURCE_EXHAUSTED (docs/structured_outputs.md).");
ABSL_FLAG(int, max_constraint_compile_ms, 2000,
          "Structured outputs: time a constraint may take to compile (its first token's mask "
          "included); slower ones get RESOURCE_EXHAUSTED.");
ABSL_FLAG(double, shutdown_grace_s, 5.0,
          "On SIGTERM/SIGINT, seconds in-flight requests get to finish; then they end with "
          "UNAVAILABLE (\"server shutting down: the drain grace of N s ran out\").");
ABSL_FLAG(std::string, tls_cert, "", "PEM certificate chain: serve TLS (with --tls_key).");
ABSL_FLAG(std::string, tls_key, "", "PEM private key for --tls_cert.");
ABSL_FLAG(std::string, log_level, "info", "debug, info, warning or error.");
ABSL_FLAG(double, log_stats_interval_s, 10,
          "Every this many seconds, log a stats line (prompt and generation tokens/s, running "
          "and waiting requests, KV cache usage) when anything happened since the last; 0: off.");
ABSL_FLAG(bool, log_prompts, false,
          "Log each generation request's prompt (text or token ids). Off by default: prompts "
          "are the users' data and are never logged otherwise.");
