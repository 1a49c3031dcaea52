// kvserve-bench's metric definitions on hand-made request records, where the
// right answers are known exactly.
#include "client/bench/summary.h"

#include "gtest/gtest.h"

namespace kvserve::bench {
namespace {

absl::Time T(double ms) { return absl::UnixEpoch() + absl::Milliseconds(ms); }

RequestRecord Record(double sent, std::vector<std::pair<double, int>> chunks, int prompt = 10) {
  RequestRecord r;
  r.sent = T(sent);
  r.prompt_tokens = prompt;
  for (auto [at, tokens] : chunks) {
    r.chunk_times.push_back(T(at));
    r.chunk_tokens.push_back(tokens);
    r.output_tokens += tokens;
  }
  r.first_chunk = r.chunk_times.front();
  r.done = r.chunk_times.back();
  return r;
}

TEST(BenchSummaryTest, PercentilesInterpolateLikeNumpy) {
  Distribution d = Summarize({4, 1, 3, 2});
  EXPECT_EQ(d.count, 4);
  EXPECT_DOUBLE_EQ(d.mean, 2.5);
  EXPECT_DOUBLE_EQ(d.p50, 2.5);
  EXPECT_DOUBLE_EQ(d.p90, 3.7);
  EXPECT_DOUBLE_EQ(d.p99, 3.97);
  EXPECT_DOUBLE_EQ(d.min, 1);
  EXPECT_DOUBLE_EQ(d.max, 4);
  EXPECT_EQ(Summarize({}).count, 0);
}

TEST(BenchSummaryTest, StandardDefinitions) {
  LevelRun run;
  run.start = T(0);
  // A: sent at 0, first chunk at 100 ms (1 token), then 2 tokens at 140, 1 at 150.
  run.records.push_back(Record(0, {{100, 1}, {140, 2}, {150, 1}}));
  // B: sent at 50, one chunk of 1 token at 250: no TPOT (fewer than 2 tokens).
  run.records.push_back(Record(50, {{250, 1}}, 20));
  RequestRecord failed;
  failed.sent = T(10);
  failed.done = T(20);
  failed.code = grpc::StatusCode::RESOURCE_EXHAUSTED;
  run.records.push_back(failed);
  run.end = T(250);
  BenchConfig config;
  config.slo_ttft_ms = 150;  // A meets it, B does not
  LevelSummary s = SummarizeLevel(run, config);
  EXPECT_EQ(s.completed, 2);
  EXPECT_EQ(s.failed, 1);
  EXPECT_EQ(s.errors_by_code.at("RESOURCE_EXHAUSTED"), 1);
  EXPECT_DOUBLE_EQ(s.duration_s, 0.25);  // first send → last end
  EXPECT_EQ(s.output_tokens, 5);
  EXPECT_EQ(s.prompt_tokens, 30);
  EXPECT_DOUBLE_EQ(s.output_tokens_per_s, 20);
  EXPECT_DOUBLE_EQ(s.total_tokens_per_s, 140);
  EXPECT_DOUBLE_EQ(s.request_throughput, 8);
  EXPECT_DOUBLE_EQ(s.ttft_ms.mean, (100 + 200) / 2.0);
  // TPOT of A: (150 − 100) / (4 − 1).
  EXPECT_EQ(s.tpot_ms.count, 1);
  EXPECT_NEAR(s.tpot_ms.mean, 50.0 / 3, 1e-9);
  // ITL of A: 40 ms over 2 tokens → 20, 20; then 10 → 10.
  EXPECT_EQ(s.itl_ms.count, 3);
  EXPECT_NEAR(s.itl_ms.mean, 50.0 / 3, 1e-9);
  EXPECT_DOUBLE_EQ(s.e2e_ms.max, 200);
  EXPECT_EQ(s.good_requests, 1);
  EXPECT_DOUBLE_EQ(s.goodput, 4);
}

TEST(BenchSummaryTest, RequestsByReplicaAndFailovers) {
  LevelRun run;
  run.start = T(0);
  RequestRecord a = Record(0, {{10, 1}});
  a.replica = "10.0.0.1:1";
  RequestRecord moved = Record(0, {{20, 1}});  // refused by one replica, answered by .2
  moved.replica = "10.0.0.2:1";
  moved.attempts = 2;
  moved.failovers = 1;
  RequestRecord cut;  // streamed, then its replica died: failed, not resent
  cut.replica = "10.0.0.2:1";
  cut.code = grpc::StatusCode::UNAVAILABLE;
  run.records = {a, moved, cut};
  run.end = T(30);
  LevelSummary s = SummarizeLevel(run, BenchConfig());
  ASSERT_EQ(s.replicas.size(), 2u);
  EXPECT_EQ(s.replicas.at("10.0.0.1:1").requests, 1);
  EXPECT_EQ(s.replicas.at("10.0.0.1:1").completed, 1);
  EXPECT_EQ(s.replicas.at("10.0.0.2:1").requests, 2);
  EXPECT_EQ(s.replicas.at("10.0.0.2:1").completed, 1);
  EXPECT_EQ(s.replicas.at("10.0.0.2:1").failed, 1);
  EXPECT_EQ(s.failovers, 1);
  EXPECT_EQ(s.retried_requests, 1);
}

}  // namespace
}  // namespace kvserve::bench
