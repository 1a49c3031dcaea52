#include "client/bench/report.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace kvserve::bench {
namespace {

std::string Cell(const Distribution& d) {
  return absl::StrFormat("%.1f/%.1f/%.1f/%.1f", d.mean, d.p50, d.p90, d.p99);
}

nlohmann::json ToJson(const Distribution& d) {
  return {{"count", d.count}, {"mean", d.mean}, {"p50", d.p50}, {"p90", d.p90},
          {"p99", d.p99},     {"min", d.min},   {"max", d.max}};
}

}  // namespace

std::string FormatTable(const std::vector<LevelSummary>& levels) {
  std::ostringstream out;
  out << absl::StrFormat("%-16s %6s %5s %8s %7s %9s %9s %24s %24s %24s %26s %8s\n", "load", "done",
                         "errs", "time s", "req/s", "out tok/s", "tot tok/s",
                         "TTFT ms mean/p50/90/99", "TPOT ms mean/p50/90/99",
                         "ITL ms mean/p50/90/99", "E2E ms mean/p50/90/99", "goodput");
  for (const LevelSummary& s : levels) {
    out << absl::StrFormat("%-16s %6d %5d %8.2f %7.2f %9.1f %9.1f %24s %24s %24s %26s %8.2f\n",
                           s.label, s.completed, s.failed, s.duration_s, s.request_throughput,
                           s.output_tokens_per_s, s.total_tokens_per_s, Cell(s.ttft_ms),
                           Cell(s.tpot_ms), Cell(s.itl_ms), Cell(s.e2e_ms), s.goodput);
  }
  for (const LevelSummary& s : levels) {
    if (!s.errors_by_code.empty()) {
      out << s.label << " errors:";
      for (const auto& [code, n] : s.errors_by_code) out << " " << code << "=" << n;
      out << "\n";
    }
  }
  // Per replica, when there are several (or a request had to move).
  for (const LevelSummary& s : levels) {
    if (s.replicas.size() < 2 && s.failovers == 0) continue;
    out << s.label << " replicas (requests completed/failed):";
    for (const auto& [address, share] : s.replicas) {
      out << " " << address << "=" << share.completed << "/" << share.failed;
    }
    out << " | failovers " << s.failovers << ", requests retried " << s.retried_requests << "\n";
  }
  bool any_server = false;
  for (const LevelSummary& s : levels) any_server |= s.server.has_value();
  if (any_server) {
    out << absl::StrFormat("\n%-16s %16s %20s %20s %12s %18s\n", "server side", "requests counted",
                           "TTFT mean ms (srv)", "TTFT mean ms (bench)", "preemptions",
                           "KV blocks peak/all");
    for (const LevelSummary& s : levels) {
      if (!s.server) continue;
      out << absl::StrFormat("%-16s %16.0f %20.2f %20.2f %12.0f %11.0f/%.0f\n", s.label,
                             s.server->requests, s.server->ttft_mean_ms, s.ttft_ms.mean,
                             s.server->preemptions, s.server->kv_blocks_used_peak,
                             s.server->kv_blocks_total);
    }
  }
  return out.str();
}

absl::Status WriteJson(const std::string& path, const BenchConfig& config,
                       const v1::GetModelInfoResponse& model,
                       const std::vector<LevelSummary>& levels) {
  nlohmann::json j;
  j["model"] = {{"name", model.model_name()}, {"device", model.device()}, {"dtype", model.dtype()},
                {"vocab_size", model.vocab_size()}, {"max_context", model.max_context()}};
  j["config"] = {{"targets", config.targets},
                 {"concurrency", config.concurrency},
                 {"rate", config.rate ? nlohmann::json(*config.rate) : nlohmann::json()},
                 {"requests", config.requests},
                 {"duration_s", config.duration_s},
                 {"prompt_tokens", config.prompt.mean},
                 {"output_tokens", config.output.mean},
                 {"ignore_eos", config.ignore_eos},
                 {"temperature", config.temperature},
                 {"seed", config.seed}};
  j["definitions"] = {
      {"ttft_ms", "send to first chunk received"},
      {"itl_ms", "gap between chunks divided over the tokens of the chunk"},
      {"tpot_ms", "(e2e - ttft) / (tokens - 1), requests with >= 2 tokens"},
      {"e2e_ms", "send to stream end"},
      {"duration_s", "first measured send to last measured end"},
      {"replicas", "measured requests by the replica that gave the final answer"},
      {"failovers", "attempts moved to another replica after UNAVAILABLE before any token"}};
  nlohmann::json out_levels = nlohmann::json::array();
  for (const LevelSummary& s : levels) {
    nlohmann::json l = {{"label", s.label},
                        {"concurrency", s.concurrency},
                        {"rate", s.rate},
                        {"completed", s.completed},
                        {"failed", s.failed},
                        {"errors_by_code", s.errors_by_code},
                        {"duration_s", s.duration_s},
                        {"prompt_tokens", s.prompt_tokens},
                        {"output_tokens", s.output_tokens},
                        {"request_throughput", s.request_throughput},
                        {"output_tokens_per_s", s.output_tokens_per_s},
                        {"total_tokens_per_s", s.total_tokens_per_s},
                        {"ttft_ms", ToJson(s.ttft_ms)},
                        {"tpot_ms", ToJson(s.tpot_ms)},
                        {"itl_ms", ToJson(s.itl_ms)},
                        {"e2e_ms", ToJson(s.e2e_ms)},
                        {"good_requests", s.good_requests},
                        {"goodput", s.goodput},
                        {"failovers", s.failovers},
                        {"retried_requests", s.retried_requests}};
    nlohmann::json replicas = nlohmann::json::object();
    for (const auto& [address, share] : s.replicas) {
      replicas[address] = {{"requests", share.requests},
                           {"completed", share.completed},
                           {"failed", share.failed}};
    }
    l["replicas"] = replicas;
    if (s.server) {
      l["server"] = {{"requests", s.server->requests},
                     {"ttft_mean_ms", s.server->ttft_mean_ms},
                     {"ttft_count", s.server->ttft_count},
                     {"preemptions", s.server->preemptions},
                     {"kv_blocks_total", s.server->kv_blocks_total},
                     {"kv_blocks_used_peak", s.server->kv_blocks_used_peak}};
    }
    out_levels.push_back(l);
  }
  j["levels"] = out_levels;
  std::ofstream file(path);
  if (!file) return absl::UnavailableError(absl::StrCat("--json_out: cannot write ", path));
  file << j.dump(2) << "\n";
  return absl::OkStatus();
}

void WriteRecords(std::ostream& out, const LevelRun& run) {
  for (const RequestRecord& r : run.records) {
    nlohmann::json j = {{"level", run.label},
                        {"index", r.index},
                        {"request_id", r.request_id},
                        {"replica", r.replica},
                        {"attempts", r.attempts},
                        {"failovers", r.failovers},
                        {"code", static_cast<int>(r.code)},
                        {"error", r.error},
                        {"prompt_tokens", r.prompt_tokens},
                        {"output_tokens", r.output_tokens}};
    out << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  }
}

namespace {

bool OnPath(absl::string_view program) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return false;
  for (absl::string_view dir : absl::StrSplit(path, ':', absl::SkipEmpty())) {
    if (access(absl::StrCat(dir, "/", program).c_str(), X_OK) == 0) return true;
  }
  return false;
}

constexpr absl::string_view kNoGnuplot =
    "--plot_out: gnuplot not found on $PATH: install it (apt-get install gnuplot-nox, or "
    "deploy/install-deps.sh) or drop --plot_out";

}  // namespace

absl::Status CheckGnuplot() {
  if (OnPath("gnuplot")) return absl::OkStatus();
  return absl::FailedPreconditionError(kNoGnuplot);
}

absl::Status WritePlot(const std::string& path, const std::vector<LevelSummary>& levels,
                       const std::string& title) {
  const std::string data = path + ".dat";
  const std::string script = path + ".gp";
  {
    std::ofstream d(data);
    for (const LevelSummary& s : levels) {
      d << absl::StrFormat("%g %g %g %g \"%s\"\n", s.output_tokens_per_s, s.e2e_ms.p50,
                           s.e2e_ms.p99, s.ttft_ms.p50,
                           s.concurrency > 0 ? absl::StrCat("c=", s.concurrency)
                                             : absl::StrFormat("%g/s", s.rate));
    }
  }
  {
    std::ofstream g(script);
    g << "set terminal pngcairo size 1000,650 noenhanced\n"
      << "set output '" << path << "'\n"
      << "set title '" << title << "'\n"
      << "set xlabel 'output tokens/s'\nset ylabel 'latency (ms)'\n"
      << "set grid\nset key top left\n"
      << "plot '" << data << "' using 1:2 with linespoints pt 7 title 'E2E p50', \\\n"
      << "     '' using 1:3 with linespoints pt 5 title 'E2E p99', \\\n"
      << "     '' using 1:4 with linespoints pt 9 title 'TTFT p50', \\\n"
      << "     '' using 1:2:5 with labels offset 0,1 notitle\n";
  }
  const std::string command = absl::StrCat("gnuplot '", script, "' 2>&1");
  const int rc = std::system(command.c_str());
  std::filesystem::remove(script);
  std::filesystem::remove(data);
  // system() returns a wait status: 127 is the shell's "command not found".
  if (rc == -1 || !WIFEXITED(rc)) {
    return absl::InternalError(absl::StrCat("--plot_out: could not run gnuplot (status ", rc, ")"));
  }
  if (WEXITSTATUS(rc) == 127) return absl::FailedPreconditionError(kNoGnuplot);
  if (WEXITSTATUS(rc) != 0) {
    return absl::UnavailableError(absl::StrCat("--plot_out: gnuplot failed (exit status ",
                                               WEXITSTATUS(rc), "); its messages are above"));
  }
  return absl::OkStatus();
}

}  // namespace kvserve::bench
