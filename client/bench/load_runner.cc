#include "client/bench/load_runner.h"

#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <cstdio>
#include <mutex>
#include <random>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace kvserve::bench {
namespace {

// Reports progress every second on its own thread until destroyed, then once more.
class ProgressReporter {
 public:
  explicit ProgressReporter(std::function<void(bool final)> report) : report_(std::move(report)) {
    thread_ = std::thread([this] {
      while (!stop_.load()) {
        for (int i = 0; i < 10 && !stop_.load(); ++i) absl::SleepFor(absl::Milliseconds(100));
        if (!stop_.load()) report_(false);
      }
    });
  }
  ~ProgressReporter() {
    stop_ = true;
    thread_.join();
    report_(true);
  }

 private:
  std::function<void(bool)> report_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

RequestRecord FromStream(int64_t index, const StreamResult& r) {
  RequestRecord rec;
  rec.index = index;
  rec.sent = r.sent;
  rec.first_chunk = r.first_chunk;
  rec.done = r.done;
  rec.chunk_times = r.chunk_times;
  rec.chunk_tokens = r.chunk_tokens;
  rec.output_tokens = r.response.token_ids_size();
  rec.prompt_tokens = static_cast<int>(r.response.usage().prompt_tokens());
  rec.code = r.status.error_code();
  rec.error = r.status.error_message();
  rec.replica = r.replica;
  rec.attempts = r.attempts;
  rec.failovers = r.failovers;
  return rec;
}

}  // namespace

RequestRecord LoadRunner::Send(int64_t index) {
  const PlannedRequest planned = workload_.Get(index);
  CallOptions options;
  options.timeout = absl::Seconds(config_.timeout_s);
  sent_.fetch_add(1);
  return Record(index, client_.GenerateStream(planned.request, {}, options), planned);
}

RequestRecord LoadRunner::Record(int64_t index, const StreamResult& r, const PlannedRequest& planned) {
  RequestRecord rec = FromStream(index, r);
  rec.request_id = planned.request.request_id();
  if (rec.prompt_tokens == 0) rec.prompt_tokens = planned.prompt_tokens;
  done_.fetch_add(1);
  if (!rec.ok()) failed_.fetch_add(1);
  tokens_.fetch_add(rec.output_tokens);
  return rec;
}

void LoadRunner::Progress(const std::string& label, bool final) {
  if (!config_.progress) return;
  const double elapsed = absl::ToDoubleSeconds(absl::Now() - level_start_);
  const std::string line = absl::StrFormat(
      "[%s] %.1fs sent %d done %d failed %d | %.1f output tokens/s", label, elapsed, sent_.load(),
      done_.load(), failed_.load(), elapsed > 0 ? tokens_.load() / elapsed : 0.0);
  // On a terminal, one line rewritten in place; in logs, a line per report.
  if (isatty(STDERR_FILENO)) {
    std::fprintf(stderr, "\r%-100s%s", line.c_str(), final ? "\n" : "");
  } else {
    std::fprintf(stderr, "%s\n", line.c_str());
  }
  std::fflush(stderr);
}

LevelRun LoadRunner::RunClosedLoop(int concurrency, const std::function<void()>& on_measure_start,
                                   const std::function<void()>& on_measure_end) {
  LevelRun run;
  run.concurrency = concurrency;
  run.label = absl::StrCat("concurrency ", concurrency);
  // Warm-up: `warmup` requests at this concurrency, then a barrier.
  const int warmup = config_.warmup_requests >= 0 ? config_.warmup_requests : concurrency;
  {
    std::atomic<int64_t> warmup_issued{0};
    std::vector<std::thread> workers;
    for (int w = 0; w < std::min(concurrency, warmup); ++w) {
      workers.emplace_back([&] {
        for (int64_t i; (i = warmup_issued.fetch_add(1)) < warmup;) Send(next_index_ + i);
      });
    }
    for (auto& t : workers) t.join();
    next_index_ += warmup;
  }
  sent_ = 0, done_ = 0, failed_ = 0, tokens_ = 0;
  if (on_measure_start) on_measure_start();

  std::mutex mu;
  std::atomic<int64_t> issued{0};
  run.start = level_start_ = absl::Now();
  const absl::Time deadline =
      config_.duration_s > 0 ? run.start + absl::Seconds(config_.duration_s) : absl::InfiniteFuture();
  const int64_t base = next_index_;
  std::vector<std::thread> workers;
  for (int w = 0; w < concurrency; ++w) {
    workers.emplace_back([&] {
      for (;;) {
        if (absl::Now() >= deadline) return;
        const int64_t i = issued.fetch_add(1);
        if (config_.requests > 0 && i >= config_.requests) return;
        RequestRecord rec = Send(base + i);
        std::lock_guard<std::mutex> lock(mu);
        run.records.push_back(std::move(rec));
      }
    });
  }
  {
    ProgressReporter reporter([&](bool final) { Progress(run.label, final); });
    for (auto& t : workers) t.join();
    run.end = absl::Now();
    if (on_measure_end) on_measure_end();
  }
  next_index_ = base + issued.load();
  return run;
}

LevelRun LoadRunner::RunOpenLoop(double rate, const std::function<void()>& on_measure_start,
                                 const std::function<void()>& on_measure_end) {
  LevelRun run;
  run.rate = rate;
  run.label = absl::StrFormat("rate %g/s", rate);
  std::mutex mu;
  std::condition_variable cv;
  int in_flight = 0;
  std::mt19937_64 rng(config_.seed);
  std::exponential_distribution<double> gap(rate);

  // Sends `count` requests (or until `until`) at the rate; waits for all.
  auto drive = [&](int64_t count, absl::Time until, bool measured) {
    absl::Time next = absl::Now();
    for (int64_t i = 0; (count <= 0 || i < count) && absl::Now() < until; ++i) {
      absl::SleepFor(next - absl::Now());
      next += absl::Seconds(config_.arrival == Arrival::kPoisson ? gap(rng) : 1.0 / rate);
      {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return in_flight < config_.max_in_flight; });
        ++in_flight;
      }
      const int64_t index = next_index_++;
      const PlannedRequest planned = workload_.Get(index);
      CallOptions options;
      options.timeout = absl::Seconds(config_.timeout_s);
      sent_.fetch_add(1);
      client_.StartGenerateStream(
          planned.request, {},
          [&, index, measured, planned](StreamResult r) {
            RequestRecord rec = Record(index, r, planned);
            std::lock_guard<std::mutex> lock(mu);
            if (measured) run.records.push_back(std::move(rec));
            --in_flight;
            cv.notify_all();
          },
          options);
    }
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return in_flight == 0; });
  };

  const int warmup = config_.warmup_requests >= 0 ? config_.warmup_requests : 1;
  if (warmup > 0) drive(warmup, absl::InfiniteFuture(), false);
  sent_ = 0, done_ = 0, failed_ = 0, tokens_ = 0;
  if (on_measure_start) on_measure_start();
  run.start = level_start_ = absl::Now();
  {
    ProgressReporter reporter([&](bool final) { Progress(run.label, final); });
    drive(config_.requests,
          config_.duration_s > 0 ? run.start + absl::Seconds(config_.duration_s)
                                 : absl::InfiniteFuture(),
          true);
    run.end = absl::Now();
    if (on_measure_end) on_measure_end();
  }
  return run;
}

}  // namespace kvserve::bench
