#include "client/bench/bench_config.h"

#include "absl/strings/str_cat.h"

namespace kvserve::bench {

absl::StatusOr<LengthDist> ParseLengthDist(const std::string& name) {
  if (name == "fixed") return LengthDist::kFixed;
  if (name == "uniform") return LengthDist::kUniform;
  if (name == "lognormal") return LengthDist::kLogNormal;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown length distribution \"", name, "\" (fixed, uniform, lognormal)"));
}

absl::Status BenchConfig::Validate() const {
  auto bad = [](auto&&... parts) { return absl::InvalidArgumentError(absl::StrCat(parts...)); };
  if (targets.empty()) return bad("--target: at least one HOST:PORT");
  if (cold_warm) {
    if (rate || !concurrency.empty()) {
      return bad("--cold_warm sends one request at a time: drop --concurrency/--rate");
    }
    if (requests == 1 || requests < 0) {
      return bad("--cold_warm needs --requests >= 2 (0: one per --prompts_file line), got ",
                 requests);
    }
    if (requests == 0 && prompts_file.empty()) {
      return bad("--cold_warm needs --requests N or a --prompts_file");
    }
  } else if (!rate && concurrency.empty()) {
    return bad("--concurrency or --rate is needed");
  }
  if (rate && (!(*rate > 0))) return bad("--rate must be > 0, got ", *rate);
  for (int c : concurrency) {
    if (c < 1 || c > 4096) return bad("--concurrency values must be in [1, 4096], got ", c);
  }
  if (!cold_warm && requests <= 0 && duration_s <= 0) return bad("bound the run: --requests N and/or --duration_s S");
  if (requests < 0) return bad("--requests must be >= 0");
  if (duration_s < 0) return bad("--duration_s must be >= 0");
  for (const auto* spec : {&prompt, &output}) {
    const char* which = spec == &prompt ? "prompt_tokens" : "output_tokens";
    if (spec->mean < 1) return bad("--", which, " must be >= 1, got ", spec->mean);
    if (spec->min < 1) return bad("--", which, "_min must be >= 1");
    if (spec->max != 0 && spec->max < spec->min) return bad("--", which, "_max must be >= its min");
    if (!(spec->sigma >= 0)) return bad("--", which, "_sigma must be >= 0");
  }
  if (max_in_flight < 1) return bad("--max_in_flight must be >= 1");
  if (!(timeout_s > 0)) return bad("--timeout_s must be > 0");
  if (!(connect_timeout_s > 0 && connect_timeout_s <= 3600)) {
    return bad("--connect_timeout_s must be in (0, 3600], got ", connect_timeout_s);
  }
  if (temperature < 0) return bad("--temperature must be >= 0");
  return absl::OkStatus();
}

}  // namespace kvserve::bench
