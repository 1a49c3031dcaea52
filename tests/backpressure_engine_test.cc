// Output back-pressure in the engine (docs/backpressure.md): a request whose
// sink says it is paused is not scheduled and keeps its KV blocks; once
// resumed it finishes with the tokens of an unpaused run; paused past
// --max_stall_s it ends with RESOURCE_EXHAUSTED and its blocks are freed.
// No sleeps: the test waits on the engine's own metrics.
#include <atomic>

#include "engine/core/unsent_tokens.h"
#include "gtest/gtest.h"
#include "tests/engine_test_util.h"

namespace kvserve::testing {
namespace {

// A client that stops reading after `read_limit` tokens: paused from then on
// until Resume.
class StallingSink final : public RequestSink {
 public:
  explicit StallingSink(int read_limit) : read_limit_(read_limit) {}

  void OnOutput(RequestOutput output) override {
    std::lock_guard<std::mutex> lock(mu_);
    tokens_.insert(tokens_.end(), output.token_ids.begin(), output.token_ids.end());
    if (static_cast<int>(tokens_.size()) >= read_limit_) paused_.store(true);
    if (output.finished()) Done(absl::OkStatus());
  }
  void OnAbort(absl::Status status) override {
    std::lock_guard<std::mutex> lock(mu_);
    Done(std::move(status));
  }
  bool IsCancelled() const override { return false; }
  bool IsPaused() const override { return paused_.load(); }

  void Resume(Engine& engine) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      read_limit_ = 1 << 30;
      paused_.store(false);
    }
    engine.Wake();
  }
  std::vector<int32_t> tokens() const {
    std::lock_guard<std::mutex> lock(mu_);
    return tokens_;
  }
  bool WaitDone(absl::Duration timeout = absl::Seconds(120)) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, absl::ToChronoMilliseconds(timeout), [&] { return done_; });
  }
  absl::Status status() const {
    std::lock_guard<std::mutex> lock(mu_);
    return status_;
  }

 private:
  void Done(absl::Status status) {
    status_ = std::move(status);
    done_ = true;
    cv_.notify_all();
  }

  mutable std::mutex mu_;
  std::condition_variable cv_;
  int read_limit_;
  std::vector<int32_t> tokens_;
  bool done_ = false;
  absl::Status status_;
  std::atomic<bool> paused_{false};
};

// Waits (generously, polling the registry) until `name` reads `value`.
bool WaitForMetric(prometheus::Registry& registry, const std::string& name, double value) {
  const absl::Time deadline = absl::Now() + absl::Seconds(120);
  while (absl::Now() < deadline) {
    if (MetricValue(registry, name) == value) return true;
    absl::SleepFor(absl::Milliseconds(5));
  }
  return false;
}

TEST(BackpressureEngineTest, PausedRequestIsNotScheduledKeepsItsBlocksAndResumes) {
  TestEngine t = MakeCpuEngine("");
  ASSERT_NE(t.engine, nullptr);
  const Request request = GreedyRequest({5, 6, 7}, 150);
  const std::vector<int32_t> unpaused = RunToCompletion(*t.engine, request)->tokens;
  ASSERT_EQ(unpaused.size(), 150u);

  auto sink = std::make_shared<StallingSink>(10);
  ASSERT_TRUE(t.engine->Submit(request, sink).ok());
  // The gauge is published after the outputs of every earlier iteration were
  // delivered, and a paused request gets none in its own: what the sink
  // holds now is all it will get while paused.
  ASSERT_TRUE(WaitForMetric(*t.registry, "kvserve_requests_paused", 1));
  const size_t held = sink->tokens().size();
  EXPECT_GE(held, 10u);
  EXPECT_LT(held, 150u);
  EXPECT_GT(t.engine->num_used_blocks(), 0);  // its KV is kept
  EXPECT_EQ(MetricValue(*t.registry, "kvserve_stream_pauses_total"), 1);

  // Another request runs to its end meanwhile: the paused one is not scheduled.
  EXPECT_EQ(RunToCompletion(*t.engine, GreedyRequest({9, 8}, 20))->tokens.size(), 20u);
  EXPECT_EQ(sink->tokens().size(), held);
  EXPECT_GT(t.engine->num_used_blocks(), 0);

  sink->Resume(*t.engine);
  ASSERT_TRUE(sink->WaitDone());
  EXPECT_TRUE(sink->status().ok()) << sink->status();
  EXPECT_EQ(sink->tokens(), unpaused);
  EXPECT_TRUE(WaitForMetric(*t.registry, "kvserve_requests_paused", 0));
  EXPECT_TRUE(WaitForMetric(*t.registry, "kvserve_kv_blocks_used", 0));
}

TEST(BackpressureEngineTest, RequestPausedPastMaxStallEndsAndFreesItsBlocks) {
  EngineConfig config;
  config.max_stall_s = 0.2;  // the engine's own timed wake ends it; the test only waits
  TestEngine t = MakeCpuEngine("", config);
  ASSERT_NE(t.engine, nullptr);
  auto sink = std::make_shared<StallingSink>(5);
  ASSERT_TRUE(t.engine->Submit(GreedyRequest({5, 6, 7}, 500), sink).ok());
  ASSERT_TRUE(sink->WaitDone());
  EXPECT_EQ(sink->status().code(), absl::StatusCode::kResourceExhausted) << sink->status();
  EXPECT_NE(sink->status().message().find("--max_stall_s"), std::string::npos) << sink->status();
  EXPECT_LT(sink->tokens().size(), 500u);
  EXPECT_TRUE(WaitForMetric(*t.registry, "kvserve_stream_stall_cancels_total", 1));
  EXPECT_TRUE(WaitForMetric(*t.registry, "kvserve_requests_paused", 0));
  EXPECT_TRUE(WaitForMetric(*t.registry, "kvserve_kv_blocks_used", 0));
  EXPECT_EQ(t.engine->num_used_blocks(), 0);
}

TEST(BackpressureEngineTest, ZeroMaxUnsentTokensNeverPauses) {
  EngineConfig config;
  config.max_unsent_tokens = 0;
  TestEngine t = MakeCpuEngine("", config);
  ASSERT_NE(t.engine, nullptr);
  auto sink = std::make_shared<StallingSink>(1);  // would pause at once
  ASSERT_TRUE(t.engine->Submit(GreedyRequest({5, 6, 7}, 30), sink).ok());
  ASSERT_TRUE(sink->WaitDone());
  EXPECT_TRUE(sink->status().ok()) << sink->status();
  EXPECT_EQ(sink->tokens().size(), 30u);
}

TEST(UnsentTokensTest, PausesAtTheLimitAndResumesAtHalfOfIt) {
  UnsentTokens unsent(8);
  unsent.Produced(7);
  EXPECT_FALSE(unsent.paused());
  unsent.Produced(1);
  EXPECT_TRUE(unsent.paused());
  EXPECT_FALSE(unsent.Written(3));  // 5 left: above the low-water mark of 4
  EXPECT_TRUE(unsent.paused());
  EXPECT_TRUE(unsent.Written(1));   // 4 left: resumed, the caller wakes the engine
  EXPECT_FALSE(unsent.paused());
  EXPECT_FALSE(unsent.Written(1));  // already running: no second wake
  unsent.Produced(5);               // 8 again
  EXPECT_TRUE(unsent.paused());
  EXPECT_TRUE(unsent.Discard());    // the client is gone: nothing holds it back
  EXPECT_EQ(unsent.count(), 0);

  UnsentTokens unlimited(0);
  unlimited.Produced(1 << 20);
  EXPECT_FALSE(unlimited.paused());
}

TEST(BackpressureEngineTest, ConfigLimitsNameTheFlag) {
  EngineConfig config;
  config.max_unsent_tokens = -1;
  EXPECT_NE(config.Validate().message().find("--max_unsent_tokens"), std::string::npos);
  config = {};
  config.max_stall_s = -1;
  EXPECT_NE(config.Validate().message().find("--max_stall_s"), std::string::npos);
}

}  // namespace
}  // namespace kvserve::testing
