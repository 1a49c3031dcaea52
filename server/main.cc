// kvserve: the LLM inference server.
//
//   kvserve [MODEL] [--model DIR|FILE.gguf] [--host H] [--port P] [--metrics_port M] ...
//
// Checks that its ports are free, loads the model, starts the engine and the
// gRPC server, logs one line when serving, and on SIGTERM/SIGINT stops
// accepting, gives in-flight streams --shutdown_grace_s to finish (then ends
// them with UNAVAILABLE), and exits 0.
#include <semaphore.h>
#include <signal.h>

#include <atomic>
#include <cerrno>

#include <cstdlib>
#include <iostream>

#include "absl/flags/flag.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "base/command_line.h"
#include "base/logging.h"
#include "engine/core/engine.h"
#include "engine/core/metrics/prometheus_stats_logger.h"
#include "engine/core/metrics/stats_fan_out.h"
#include "engine/core/metrics/stats_line_logger.h"
#include "engine/loading/chat_template_file.h"
#include "engine/loading/model_loader.h"
#include "server/auth_flags.h"
#include "server/backend_factory.h"
#include "server/chat_setup.h"
#include "server/drain.h"
#include "server/flag_groups.h"
#include "server/flags.h"
#include "server/grpc_limit_flags.h"
#include "server/http/http_server.h"
#include "server/http_flags.h"
#include "server/server.h"
#include "server/startup_flags.h"

namespace kvserve {
namespace {

// The stop signal's number, posted by its handler. A handler (not only
// sigwait) because threads that libraries start before main blocks the
// signals (OpenBLAS's, at load time) would otherwise take SIGTERM with its
// default action and kill the process mid-shutdown (seen in rapid_reset_test).
std::atomic<int> stop_signal{0};
sem_t stop_posted;
extern "C" void OnStopSignal(int signal_number) {
  stop_signal.store(signal_number);
  sem_post(&stop_posted);  // async-signal-safe
}

absl::Status SetLogLevel(const std::string& level) {
  if (level == "debug") SetMinLogLevel(LogLevel::kDebug);
  else if (level == "info") SetMinLogLevel(LogLevel::kInfo);
  else if (level == "warning") SetMinLogLevel(LogLevel::kWarning);
  else if (level == "error") SetMinLogLevel(LogLevel::kError);
  else return absl::InvalidArgumentError(absl::StrCat("--log_level: unknown level ", level));
  return absl::OkStatus();
}

int Run(const std::vector<char*>& positional) {
  // The command line is checked before anything slow: a stray argument or a
  // busy port fails in milliseconds, not after the model loads.
  absl::StatusOr<std::string> model_path = ModelFromCommandLine(positional);
  if (!model_path.ok()) {
    KV_LOG(ERROR) << model_path.status().message();
    return 2;
  }
  if (absl::Status s = SetLogLevel(absl::GetFlag(FLAGS_log_level)); !s.ok()) {
    KV_LOG(ERROR) << s.message();
    return 2;
  }
  EngineConfig config;
  config.max_num_seqs = absl::GetFlag(FLAGS_max_num_seqs);
  config.max_num_batched_tokens = absl::GetFlag(FLAGS_max_num_batched_tokens);
  config.block_size = absl::GetFlag(FLAGS_block_size);
  config.num_kv_blocks = absl::GetFlag(FLAGS_num_kv_blocks);
  config.enable_prefix_caching = absl::GetFlag(FLAGS_enable_prefix_caching);
  config.kv_cache_bytes = size_t(std::max(1, absl::GetFlag(FLAGS_kv_cache_memory_mb))) << 20;
  config.max_queued_requests = absl::GetFlag(FLAGS_max_queued_requests);
  config.default_max_new_tokens = static_cast<uint32_t>(std::max(0, absl::GetFlag(FLAGS_default_max_new_tokens)));
  config.max_unsent_tokens = absl::GetFlag(FLAGS_max_unsent_tokens);
  config.constraints.max_bytes = static_cast<size_t>(absl::GetFlag(FLAGS_max_constraint_bytes));
  config.constraints.max_compile_time =
      std::chrono::milliseconds(absl::GetFlag(FLAGS_max_constraint_compile_ms));
  config.max_stall_s = absl::GetFlag(FLAGS_max_stall_s);
  if (absl::Status s = config.Validate(); !s.ok()) {
    KV_LOG(ERROR) << s.message();
    return 2;
  }
  const double stats_interval_s = absl::GetFlag(FLAGS_log_stats_interval_s);
  if (!(stats_interval_s >= 0)) {
    KV_LOG(ERROR) << "--log_stats_interval_s must be >= 0 (0: off), got " << stats_interval_s;
    return 2;
  }
  // Before the model loads: a bad token file fails at once.
  absl::StatusOr<std::shared_ptr<const BearerTokens>> auth = BearerTokensFromFlags();
  if (!auth.ok()) {
    KV_LOG(ERROR) << auth.status().message();
    return 2;
  }
  if (absl::Status s = CheckListeningPortsFree(); !s.ok()) {
    KV_LOG(ERROR) << s.message();
    return absl::IsUnavailable(s) ? 1 : 2;
  }

  // Block the stop signals in the threads started from here on (they inherit
  // the mask); main unblocks them once serving and waits for the handler.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  sem_init(&stop_posted, 0, 0);
  struct sigaction action = {};
  action.sa_handler = OnStopSignal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);

  const std::string& model_dir = *model_path;
  absl::StatusOr<ModelSource> source = OpenModelSource(model_dir);
  if (!source.ok()) {
    KV_LOG(ERROR) << "cannot open the model: " << source.status().message();
    return 1;
  }
  if (model_dir.empty()) {
    KV_LOG(INFO) << "no model given (kvserve MODEL or --model): serving the built-in default "
                 << "model (random weights, byte tokenizer): its text is noise";
  }
  // --chat_template replaces the model's template text; the bos/eos strings
  // the template sees still come from the model.
  std::optional<ChatTemplateSource> chat_template = source->chat_template;
  const std::string chat_template_path = absl::GetFlag(FLAGS_chat_template);
  if (!chat_template_path.empty()) {
    absl::StatusOr<std::string> text = ReadChatTemplateFile(chat_template_path);
    if (!text.ok()) {
      KV_LOG(ERROR) << text.status().message();
      return 2;
    }
    if (!chat_template) chat_template.emplace();
    chat_template->text = *std::move(text);
    chat_template->origin = chat_template_path;
  }
  absl::StatusOr<tool_calls::ToolCallFormat> tool_format =
      ResolveToolCallFormat(absl::GetFlag(FLAGS_tool_call_parser), chat_template);
  if (!tool_format.ok()) {
    KV_LOG(ERROR) << "--tool_call_parser: " << tool_format.status().message();
    return 2;
  }
  BackendOptions backend_options{absl::GetFlag(FLAGS_device), absl::GetFlag(FLAGS_dtype),
                                 absl::GetFlag(FLAGS_gpu_memory_utilization),
                                 absl::GetFlag(FLAGS_cuda_graphs),
                                 absl::GetFlag(FLAGS_cuda_fast_kernels),
                                 absl::GetFlag(FLAGS_cuda_tune_gemms),
                                 absl::GetFlag(FLAGS_cpu_activations)};
  absl::StatusOr<std::unique_ptr<Backend>> backend = MakeBackend(backend_options, source->config, config);
  if (!backend.ok()) {
    KV_LOG(ERROR) << backend.status().message();
    return 2;
  }
  auto registry = std::make_shared<prometheus::Registry>();
  // The stats observers outlive the engine.
  PrometheusStatsLogger prometheus_stats(*registry);
  StatsLineLogger stats_line(absl::Seconds(stats_interval_s));
  StatsFanOut stats_logger({&prometheus_stats, &stats_line});
  absl::StatusOr<std::unique_ptr<Engine>> engine =
      Engine::Create(config, *std::move(source), *std::move(backend), &stats_logger);
  if (!engine.ok()) {
    KV_LOG(ERROR) << "cannot start the engine: " << engine.status().message();
    return 1;
  }

  absl::StatusOr<ChatSetup> chat =
      SetUpChat(chat_template, **engine, /*required=*/!chat_template_path.empty());
  if (!chat.ok()) {
    KV_LOG(ERROR) << "--chat_template: " << chat.status().message();
    return 2;
  }

  chat->access.tool_call_format = *tool_format;
  if (chat->access.formatter != nullptr) {
    KV_LOG(INFO) << "tool calls (tool_choice auto) parsed as "
                 << tool_calls::ToolCallFormatName(*tool_format);
  }

  ServerOptions options;
  options.chat = chat->access;
  options.auth = *auth;
  options.tls_client_ca_file = absl::GetFlag(FLAGS_tls_client_ca);
  options.host = absl::GetFlag(FLAGS_host);
  options.port = absl::GetFlag(FLAGS_port);
  options.metrics_port = absl::GetFlag(FLAGS_metrics_port);
  options.metrics_host = absl::GetFlag(FLAGS_metrics_host);
  options.shutdown_grace = absl::Seconds(absl::GetFlag(FLAGS_shutdown_grace_s));
  options.tls_cert_file = absl::GetFlag(FLAGS_tls_cert);
  options.tls_key_file = absl::GetFlag(FLAGS_tls_key);
  options.grpc_limits = GrpcLimitsFromFlags();
  options.log_prompts = absl::GetFlag(FLAGS_log_prompts);
  absl::StatusOr<std::unique_ptr<KvServer>> server = KvServer::Start(options, **engine, *registry);
  if (!server.ok()) {
    KV_LOG(ERROR) << server.status().message();
    return 1;
  }
  std::unique_ptr<http::HttpServer> http_server;
  if (absl::GetFlag(FLAGS_http_port) >= 0) {
    http::HttpServerOptions http_options = HttpServerOptionsFromFlags();
    http_options.chat = chat->access;
    http_options.auth = *auth;
    auto started = http::HttpServer::Start(http_options, **engine, (*server)->metrics());
    if (!started.ok()) {
      KV_LOG(ERROR) << started.status().message();
      (*server)->Shutdown();
      (*engine)->Stop();
      return 1;
    }
    http_server = *std::move(started);
    KV_LOG(INFO) << "OpenAI-compatible HTTP API on http://" << http_options.host << ":"
                 << http_server->port() << "/v1";
  }
  const ModelInfo& info = (*engine)->info();
  KV_LOG(INFO) << "serving " << info.model_name << " on " << options.host << ":"
               << (*server)->port() << " (" << info.device << ", " << info.dtype << ")"
               << ((*server)->metrics_port() > 0
                       ? absl::StrCat("; metrics on http://", options.metrics_host, ":",
                                      (*server)->metrics_port(), "/metrics")
                       : std::string());

  pthread_sigmask(SIG_UNBLOCK, &stop_signals, nullptr);
  while (sem_wait(&stop_posted) != 0 && errno == EINTR) {
  }
  const int signal_number = stop_signal.load();
  KV_LOG(INFO) << "received " << (signal_number == SIGTERM ? "SIGTERM" : "SIGINT")
               << ": draining in-flight requests (up to " << absl::GetFlag(FLAGS_shutdown_grace_s)
               << " s)";
  DrainAndStop(**server, http_server.get(), **engine,
               absl::Seconds(absl::GetFlag(FLAGS_shutdown_grace_s)));
  KV_LOG(INFO) << "stopped";
  return 0;
}

}  // namespace
}  // namespace kvserve

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "kvserve: LLM inference server over gRPC and an OpenAI-compatible HTTP API.\n"
      "  kvserve [MODEL] [--port 50051] [--http_port 8000] [--device cpu|cuda] [...]\n"
      "MODEL (or --model): a Hugging Face model directory or a .gguf file; none: a built-in\n"
      "model of random weights.");
  kvserve::CommandLineSpec spec;
  spec.groups = kvserve::ServerFlagGroups();
#if KVSERVE_WITH_CUDA
  spec.version_note = "CUDA backend built";
#else
  spec.version_note = "CPU backend only";
#endif
  return kvserve::Run(kvserve::ParseCommandLine(argc, argv, spec));
}
