// kvserve-bench: load generator for kvserve servers.
//
//   kvserve-bench --target localhost:50051 --concurrency 1,2,4,8 --requests 64
//       --prompt_tokens 128 --output_tokens 128 --json_out r.json --plot_out r.png
//   kvserve-bench --target localhost:50051 --rate 5 --duration_s 60 --arrival poisson
//   kvserve-bench --target localhost:50051 --cold_warm --prompts_file shared_prefix.jsonl
//
// Closed loop (each of --concurrency clients sends its next request when the
// last ends; a list is a sweep) or open loop (--rate requests/s). Prints a
// progress line while it runs, then a table; --json_out and --plot_out write
// the report and, for a sweep, a throughput–latency plot. With --metrics_url
// the server's own counters are read before and after each level.
#include <fstream>
#include <iostream>
#include <sstream>

#include "absl/flags/flag.h"
#include "absl/flags/usage.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/command_line.h"
#include "client/auth_token.h"
#include "client/bench/cold_warm.h"
#include "client/bench/load_runner.h"
#include "client/bench/report.h"
#include "client/bench/server_scrape.h"
#include "client/bench/summary.h"
#include "client/bench/workload.h"
#include "client/flag_groups.h"

ABSL_FLAG(std::vector<std::string>, target, {"localhost:50051"},
          "Server address(es): HOST:PORT, comma-separated, or dns:///NAME:PORT (every "
          "address of NAME). Each request goes to the replica with the fewest in flight and "
          "fails over to another on UNAVAILABLE before any token (docs/routing.md).");
ABSL_FLAG(std::vector<std::string>, concurrency, {},
          "Closed loop: clients at once. A list (1,2,4,8) runs a sweep.");
ABSL_FLAG(double, rate, 0, "Open loop: requests per second (instead of --concurrency).");
ABSL_FLAG(std::string, arrival, "poisson", "Open loop arrivals: poisson or constant.");
ABSL_FLAG(int, max_in_flight, 1024, "Open loop: cap on outstanding requests.");
ABSL_FLAG(int, requests, 0, "Measured requests per level (0: bounded by --duration_s).");
ABSL_FLAG(double, duration_s, 0, "Seconds per level (0: bounded by --requests).");
ABSL_FLAG(int, warmup_requests, -1, "Unmeasured requests before each level (-1: its concurrency).");
ABSL_FLAG(int, prompt_tokens, 128, "Prompt length (mean for uniform, median for lognormal).");
ABSL_FLAG(std::string, prompt_dist, "fixed", "fixed, uniform or lognormal.");
ABSL_FLAG(int, prompt_tokens_max, 0, "Upper bound of prompt lengths (0: 2 x --prompt_tokens).");
ABSL_FLAG(double, prompt_sigma, 0.5, "lognormal: sigma of log(prompt length).");
ABSL_FLAG(int, output_tokens, 128, "max_new_tokens (mean/median as above).");
ABSL_FLAG(std::string, output_dist, "fixed", "fixed, uniform or lognormal.");
ABSL_FLAG(int, output_tokens_max, 0, "Upper bound of output lengths (0: 2 x --output_tokens).");
ABSL_FLAG(double, output_sigma, 0.5, "lognormal: sigma of log(output length).");
ABSL_FLAG(std::string, prompts_file, "",
          "JSONL prompts, one request a line: {\"prompt\": ...} or {\"token_ids\": [...]}, "
          "optional \"max_new_tokens\".");
ABSL_FLAG(bool, cold_warm, false,
          "Prefix-caching benchmark: request 0 alone (cold), then the others one at a time "
          "(warm); prints TTFT cold, warm p50 and the ratio. --requests 0: one per prompts line.");
ABSL_FLAG(std::string, prompt_kind, "ids", "Generated prompts: ids (random token ids) or text.");
ABSL_FLAG(bool, ignore_eos, true, "Ask the server to ignore EOS, forcing output lengths.");
ABSL_FLAG(double, temperature, 0, "sampling.temperature.");
ABSL_FLAG(std::string, json_schema, "",
          "Structured outputs: a JSON Schema file every request is constrained by "
          "(sampling.json_schema; implies --ignore_eos=false, since the output ends where the "
          "schema is complete). Compare ITL with and without it: tools/bench-constrained.sh.");
ABSL_FLAG(uint64_t, seed, 1, "Workload seed: same seed, same requests.");
ABSL_FLAG(double, timeout_s, 600, "Per-request deadline.");
ABSL_FLAG(double, connect_timeout_s, 30,
          "Seconds to wait for --target to accept connections and answer health checks as "
          "SERVING before the run (the wait is announced).");
ABSL_FLAG(double, slo_ttft_ms, 0, "Goodput SLO on time to first token (0: none).");
ABSL_FLAG(double, slo_tpot_ms, 0, "Goodput SLO on time per output token (0: none).");
ABSL_FLAG(std::string, metrics_url, "", "The server's http://HOST:PORT/metrics, to cross-check.");
ABSL_FLAG(std::string, json_out, "", "Write the JSON report here.");
ABSL_FLAG(std::string, records_out, "",
          "Write one JSON line per measured request here (request_id, replica, attempts, "
          "status, tokens).");
ABSL_FLAG(std::string, plot_out, "", "Write a throughput-latency PNG here (gnuplot).");
ABSL_FLAG(bool, tls, false, "Connect with TLS.");
ABSL_FLAG(std::string, tls_ca, "", "PEM root certificates for --tls.");
ABSL_FLAG(std::string, tls_server_name, "",
          "Name the server certificate must carry, when it differs from --target's host.");
ABSL_FLAG(std::string, tls_client_cert, "",
          "PEM client certificate, for a server with --tls_client_ca (with --tls_client_key).");
ABSL_FLAG(std::string, tls_client_key, "", "PEM private key of --tls_client_cert.");
ABSL_FLAG(std::string, auth_token_file, "",
          "File holding the bearer token (its first line that is not a # comment).");
ABSL_FLAG(std::string, auth_token, "",
          "Bearer token (prefer --auth_token_file or $KVSERVE_AUTH_TOKEN: a flag shows in ps).");
ABSL_FLAG(bool, progress, true, "Print a progress line while running.");

namespace kvserve::bench {
namespace {

absl::StatusOr<BenchConfig> ConfigFromFlags() {
  BenchConfig c;
  c.targets = absl::GetFlag(FLAGS_target);
  for (const std::string& level : absl::GetFlag(FLAGS_concurrency)) {
    int value;
    if (!absl::SimpleAtoi(level, &value)) {
      return absl::InvalidArgumentError(absl::StrCat("--concurrency: not a number: ", level));
    }
    c.concurrency.push_back(value);
  }
  if (absl::GetFlag(FLAGS_rate) > 0) c.rate = absl::GetFlag(FLAGS_rate);
  if (absl::GetFlag(FLAGS_rate) < 0) return absl::InvalidArgumentError("--rate must be > 0");
  if (c.rate && !c.concurrency.empty()) {
    return absl::InvalidArgumentError("give --concurrency or --rate, not both");
  }
  const std::string arrival = absl::GetFlag(FLAGS_arrival);
  if (arrival == "poisson") {
    c.arrival = Arrival::kPoisson;
  } else if (arrival == "constant") {
    c.arrival = Arrival::kConstant;
  } else {
    return absl::InvalidArgumentError("--arrival must be poisson or constant");
  }
  c.max_in_flight = absl::GetFlag(FLAGS_max_in_flight);
  c.requests = absl::GetFlag(FLAGS_requests);
  c.duration_s = absl::GetFlag(FLAGS_duration_s);
  c.warmup_requests = absl::GetFlag(FLAGS_warmup_requests);
  auto dist = ParseLengthDist(absl::GetFlag(FLAGS_prompt_dist));
  if (!dist.ok()) return dist.status();
  c.prompt = {*dist, absl::GetFlag(FLAGS_prompt_tokens), 1, absl::GetFlag(FLAGS_prompt_tokens_max),
              absl::GetFlag(FLAGS_prompt_sigma)};
  dist = ParseLengthDist(absl::GetFlag(FLAGS_output_dist));
  if (!dist.ok()) return dist.status();
  c.output = {*dist, absl::GetFlag(FLAGS_output_tokens), 1, absl::GetFlag(FLAGS_output_tokens_max),
              absl::GetFlag(FLAGS_output_sigma)};
  c.prompts_file = absl::GetFlag(FLAGS_prompts_file);
  c.cold_warm = absl::GetFlag(FLAGS_cold_warm);
  const std::string kind = absl::GetFlag(FLAGS_prompt_kind);
  if (kind == "ids") {
    c.prompt_kind = PromptKind::kTokenIds;
  } else if (kind == "text") {
    c.prompt_kind = PromptKind::kText;
  } else {
    return absl::InvalidArgumentError("--prompt_kind must be ids or text");
  }
  c.ignore_eos = absl::GetFlag(FLAGS_ignore_eos);
  if (const std::string path = absl::GetFlag(FLAGS_json_schema); !path.empty()) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return absl::InvalidArgumentError(absl::StrCat("--json_schema: cannot read ", path));
    std::stringstream text;
    text << in.rdbuf();
    c.json_schema = text.str();
    c.ignore_eos = false;
  }
  c.temperature = absl::GetFlag(FLAGS_temperature);
  c.seed = absl::GetFlag(FLAGS_seed);
  c.timeout_s = absl::GetFlag(FLAGS_timeout_s);
  c.connect_timeout_s = absl::GetFlag(FLAGS_connect_timeout_s);
  if (absl::GetFlag(FLAGS_slo_ttft_ms) > 0) c.slo_ttft_ms = absl::GetFlag(FLAGS_slo_ttft_ms);
  if (absl::GetFlag(FLAGS_slo_tpot_ms) > 0) c.slo_tpot_ms = absl::GetFlag(FLAGS_slo_tpot_ms);
  c.metrics_url = absl::GetFlag(FLAGS_metrics_url);
  c.json_out = absl::GetFlag(FLAGS_json_out);
  c.records_out = absl::GetFlag(FLAGS_records_out);
  c.plot_out = absl::GetFlag(FLAGS_plot_out);
  c.use_tls = absl::GetFlag(FLAGS_tls);
  c.tls_ca = absl::GetFlag(FLAGS_tls_ca);
  c.progress = absl::GetFlag(FLAGS_progress);
  if (absl::Status s = c.Validate(); !s.ok()) return s;
  return c;
}

// Server-side deltas of one level, when --metrics_url is set.
ServerSide Delta(const MetricSnapshot& before, const MetricSnapshot& after, double peak) {
  ServerSide s;
  auto delta = [&](const std::string& name) { return SumSeries(after, name) - SumSeries(before, name); };
  s.requests = delta("kvserve_requests_total");
  s.ttft_count = delta("kvserve_time_to_first_token_seconds_count");
  const double ttft_sum = delta("kvserve_time_to_first_token_seconds_sum");
  s.ttft_mean_ms = s.ttft_count > 0 ? 1000.0 * ttft_sum / s.ttft_count : 0;
  s.preemptions = delta("kvserve_preemptions_total");
  s.kv_blocks_total = SumSeries(after, "kvserve_kv_blocks_total");
  s.kv_blocks_used_peak = peak;
  return s;
}

// --cold_warm, with the server's prefix-cache counters when --metrics_url is set.
int RunColdWarmMode(Client& client, const Workload& workload, const BenchConfig& config) {
  const int n = config.requests > 0 ? config.requests : workload.num_file_prompts();
  if (n < 2) {
    std::cerr << "kvserve-bench: --cold_warm needs at least 2 requests, got " << n << "\n";
    return 2;
  }
  absl::StatusOr<MetricSnapshot> before;
  if (!config.metrics_url.empty()) before = Scrape(config.metrics_url);
  const ColdWarmResult result = RunColdWarm(client, workload, config, n);
  std::cout << FormatColdWarm(result);
  if (before.ok() && !config.metrics_url.empty()) {
    if (auto after = Scrape(config.metrics_url); after.ok()) {
      auto delta = [&](const char* name) { return SumSeries(*after, name) - SumSeries(*before, name); };
      std::cout << "server prefix cache: " << delta("kvserve_prefix_cache_hits_total") << " of "
                << delta("kvserve_prefix_cache_queries_total") << " prompt tokens hit\n";
    }
  }
  return result.failed == 0 ? 0 : 3;
}

// A target that answers at once is not announced; one that does not gets a
// line saying what is awaited and for how long, instead of silence.
absl::Status WaitForTargets(Client& client, const BenchConfig& config) {
  const absl::Duration limit = absl::Seconds(config.connect_timeout_s);
  const absl::Duration first = std::min(limit, absl::Milliseconds(500));
  if (client.WaitUntilServing(first).ok()) return absl::OkStatus();
  const std::string targets = absl::StrJoin(config.targets, ",");
  std::cerr << "kvserve-bench: waiting for " << targets
            << " to accept connections and report SERVING (--connect_timeout_s="
            << config.connect_timeout_s << ")...\n";
  absl::Status s = client.WaitUntilServing(limit - first);
  if (s.ok()) return s;
  return absl::DeadlineExceededError(absl::StrCat(
      targets, " did not accept connections and report SERVING within --connect_timeout_s=",
      config.connect_timeout_s, " (", s.message(), ")"));
}

int Run() {
  absl::StatusOr<BenchConfig> config = ConfigFromFlags();
  if (!config.ok()) {
    std::cerr << "kvserve-bench: " << config.status().message() << "\n";
    return 2;
  }
  if (!config->plot_out.empty()) {
    if (absl::Status s = CheckGnuplot(); !s.ok()) {
      std::cerr << "kvserve-bench: " << s.message() << "\n";
      return 2;
    }
  }
  ClientOptions options;
  options.targets = config->targets;
  options.use_tls = config->use_tls;
  options.tls_root_certs_file = config->tls_ca;
  options.tls_server_name = absl::GetFlag(FLAGS_tls_server_name);
  options.tls_client_cert_file = absl::GetFlag(FLAGS_tls_client_cert);
  options.tls_client_key_file = absl::GetFlag(FLAGS_tls_client_key);
  absl::StatusOr<std::string> token =
      ResolveAuthToken(absl::GetFlag(FLAGS_auth_token_file), absl::GetFlag(FLAGS_auth_token));
  if (!token.ok()) {
    std::cerr << "kvserve-bench: " << token.status().message() << "\n";
    return 2;
  }
  options.auth_token = *token;
  auto client = Client::Connect(options);
  if (!client.ok()) {
    std::cerr << "kvserve-bench: " << client.status().message() << "\n";
    return 2;
  }
  if (absl::Status s = WaitForTargets(**client, *config); !s.ok()) {
    std::cerr << "kvserve-bench: " << s.message() << "\n";
    return 1;
  }
  auto model = (*client)->GetModelInfo(CallOptions{absl::Seconds(10)});
  if (!model.ok()) {
    std::cerr << "kvserve-bench: GetModelInfo: " << model.status().message() << "\n";
    return 1;
  }
  auto workload = Workload::Create(*config, static_cast<int>(model->vocab_size()),
                                   static_cast<int>(model->max_context()));
  if (!workload.ok()) {
    std::cerr << "kvserve-bench: " << workload.status().message() << "\n";
    return 2;
  }
  std::cerr << "kvserve-bench: " << model->model_name() << " on " << model->device() << " ("
            << model->dtype() << "), "
            << (config->prompts_file.empty()
                    ? absl::StrCat("prompt ", config->prompt.mean, " tokens, output ",
                                   config->output.mean, " tokens")
                    : absl::StrCat("prompts from ", config->prompts_file))
            << "\n";

  if (config->cold_warm) return RunColdWarmMode(**client, *workload, *config);

  LoadRunner runner(**client, *workload, *config);
  std::vector<LevelSummary> levels;
  std::ofstream records;
  if (!config->records_out.empty()) {
    records.open(config->records_out);
    if (!records) {
      std::cerr << "kvserve-bench: --records_out: cannot write " << config->records_out << "\n";
      return 2;
    }
  }
  for (int level = 0; level < config->num_levels(); ++level) {
    // With --metrics_url: the server's counters around the measured requests
    // (after the warm-up), and its KV blocks sampled while they run.
    MetricSnapshot before, after;
    std::unique_ptr<GaugePeakSampler> peak;
    bool scraped = false;
    auto start = [&] {
      if (config->metrics_url.empty()) return;
      auto s = Scrape(config->metrics_url);
      if (!s.ok()) {
        std::cerr << "kvserve-bench: " << s.status().message() << "\n";
        return;
      }
      before = *s;
      peak = std::make_unique<GaugePeakSampler>(config->metrics_url, "kvserve_kv_blocks_used");
    };
    auto end = [&] {
      if (!peak) return;
      auto s = Scrape(config->metrics_url);
      if (s.ok()) {
        after = *s;
        scraped = true;
      }
    };
    LevelRun run = config->rate ? runner.RunOpenLoop(*config->rate, start, end)
                                : runner.RunClosedLoop(config->concurrency[level], start, end);
    LevelSummary summary = SummarizeLevel(run, *config);
    if (records.is_open()) WriteRecords(records, run);
    if (scraped) summary.server = Delta(before, after, peak->peak());
    levels.push_back(summary);
  }
  std::cout << FormatTable(levels);
  if (records.is_open()) {
    records.close();
    std::cerr << "kvserve-bench: wrote " << config->records_out << "\n";
  }
  const std::vector<ReplicaStats> replicas = (*client)->replica_stats();
  if (replicas.size() > 1) {
    // Warm-ups included: every attempt each replica was sent.
    for (const ReplicaStats& r : replicas) {
      std::cerr << "kvserve-bench: replica " << r.address << ": " << r.attempts << " attempts, "
                << r.succeeded << " ok, " << r.unavailable << " unavailable, " << r.other_errors
                << " other errors\n";
    }
  }
  int errors = 0;
  for (const LevelSummary& s : levels) errors += s.failed;
  if (!config->json_out.empty()) {
    if (absl::Status s = WriteJson(config->json_out, *config, *model, levels); !s.ok()) {
      std::cerr << "kvserve-bench: " << s.message() << "\n";
      return 1;
    }
    std::cerr << "kvserve-bench: wrote " << config->json_out << "\n";
  }
  if (!config->plot_out.empty()) {
    const std::string title = absl::StrCat("kvserve ", model->model_name(), " (", model->device(),
                                           "), prompt ", config->prompt.mean, " / output ",
                                           config->output.mean, " tokens");
    if (absl::Status s = WritePlot(config->plot_out, levels, title); !s.ok()) {
      std::cerr << "kvserve-bench: " << s.message() << "\n";
      return 1;
    }
    std::cerr << "kvserve-bench: wrote " << config->plot_out << "\n";
  }
  return errors == 0 ? 0 : 3;
}

}  // namespace
}  // namespace kvserve::bench

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "kvserve-bench --target HOST:PORT (--concurrency 1,2,4 | --rate R) (--requests N | "
      "--duration_s S) [--prompt_tokens N --output_tokens N] [--json_out F] [--plot_out F.png]");
  kvserve::CommandLineSpec spec;
  spec.groups = kvserve::BenchFlagGroups();
  spec.max_positional = 0;
  kvserve::ParseCommandLine(argc, argv, spec);
  return kvserve::bench::Run();
}
