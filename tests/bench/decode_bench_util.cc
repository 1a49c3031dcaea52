#include "tests/bench/decode_bench_util.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"

namespace kvserve::bench {
namespace {

// Records when each token of one request arrived.
class TimingSink final : public RequestSink {
 public:
  void OnOutput(RequestOutput output) override {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < output.token_ids.size(); ++i) times_.push_back(absl::Now());
    if (output.finished()) done_ = true;
    cv_.notify_all();
  }
  void OnAbort(absl::Status status) override {
    std::lock_guard<std::mutex> lock(mu_);
    status_ = std::move(status);
    done_ = true;
    cv_.notify_all();
  }
  bool IsCancelled() const override { return false; }
  absl::Status Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return done_; });
    return status_;
  }
  std::vector<absl::Time> times() const {
    std::lock_guard<std::mutex> lock(mu_);
    return times_;
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<absl::Time> times_;
  absl::Status status_;
  bool done_ = false;
};

}  // namespace

absl::StatusOr<std::vector<int>> ParseBatches(const std::string& list) {
  std::vector<int> batches;
  for (absl::string_view part : absl::StrSplit(list, ',')) {
    int b = 0;
    if (!absl::SimpleAtoi(part, &b) || b < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("--batches: bad batch size \"", std::string(part), "\""));
    }
    batches.push_back(b);
  }
  return batches;
}

int64_t WeightParams(const ModelConfig& c) {
  const int64_t h = c.hidden_size, qkv = int64_t(c.num_heads + 2 * c.num_kv_heads) * c.head_dim;
  const int64_t per_layer = h * qkv + int64_t(c.num_heads) * c.head_dim * h +
                            3 * int64_t(c.intermediate_size) * h + 2 * h;
  return int64_t(c.vocab_size) * h + c.num_layers * per_layer + h;
}

absl::StatusOr<DecodeResult> MeasureDecode(Engine& engine, int batch, int prompt_len,
                                           int new_tokens, std::mt19937& rng) {
  const int vocab = engine.info().vocab_size;
  std::vector<std::shared_ptr<TimingSink>> sinks;
  const absl::Time submitted = absl::Now();
  for (int i = 0; i < batch; ++i) {
    Request r;
    r.prompt.resize(prompt_len);
    for (int32_t& t : r.prompt) t = static_cast<int32_t>(3 + rng() % (vocab - 3));
    r.stopping.max_new_tokens = new_tokens;
    r.stopping.ignore_eos = true;
    sinks.push_back(std::make_shared<TimingSink>());
    if (absl::Status s = engine.Submit(std::move(r), sinks.back()); !s.ok()) return s;
  }
  absl::Time first_all = absl::InfinitePast(), last_all = absl::InfinitePast();
  int64_t decoded = 0;
  for (auto& sink : sinks) {
    if (absl::Status s = sink->Wait(); !s.ok()) return s;
    first_all = std::max(first_all, sink->times().front());
  }
  for (auto& sink : sinks) {
    for (absl::Time t : sink->times()) {
      if (t > first_all) ++decoded;
      last_all = std::max(last_all, t);
    }
  }
  DecodeResult r;
  r.batch = batch;
  const double seconds = absl::ToDoubleSeconds(last_all - first_all);
  r.decode_tokens_per_s = seconds > 0 ? decoded / seconds : 0;
  r.ms_per_step = seconds * 1e3 / std::max(1, new_tokens - 1);
  r.ttft_ms = absl::ToDoubleMilliseconds(first_all - submitted);
  return r;
}

}  // namespace kvserve::bench
