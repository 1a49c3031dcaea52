// The access-log line's fields (issue 27 item 7) and the periodic stats
// line: its rates over the window since the previous line, and silence
// while nothing happens. The stats logger runs on a fake clock here
// (MaybeWrite is handed the time); server_logs_test.py runs the binary.
#include <string>
#include <vector>

#include "engine/core/metrics/stats_line_logger.h"
#include "gtest/gtest.h"
#include "server/access_log.h"

namespace kvserve {
namespace {

TEST(AccessLogTest, FinishedRequestShowsEveryField) {
  AccessRecord r;
  r.api = Api::kHttp;
  r.route = "/v1/chat/completions";
  r.request_id = "chatcmpl-abc";
  r.model = "tiny";
  r.stream = true;
  r.prompt_tokens = 12;
  r.output_tokens = 34;
  r.time_to_first_token = absl::Microseconds(12345);
  r.duration = absl::Milliseconds(250);
  r.outcome = "length";
  EXPECT_EQ(FormatAccessLine(r),
            "access api=http route=/v1/chat/completions id=\"chatcmpl-abc\" model=tiny "
            "stream=true prompt_tokens=12 output_tokens=34 ttft_ms=12.3 duration_ms=250.0 "
            "outcome=length");
}

TEST(AccessLogTest, RefusedRequestHasNoTimeToFirstToken) {
  AccessRecord r;
  r.route = "Generate";
  r.model = "tiny";
  r.outcome = "invalid_argument";
  EXPECT_EQ(FormatAccessLine(r),
            "access api=grpc route=Generate id=\"\" model=tiny stream=false prompt_tokens=0 "
            "output_tokens=0 ttft_ms=- duration_ms=0.0 outcome=invalid_argument");
}

TEST(AccessLogTest, ClientChosenIdCannotForgeLines) {
  AccessRecord r;
  r.request_id = "x\" outcome=length\nI fake line";
  const std::string line = FormatAccessLine(r);
  EXPECT_EQ(line.find('\n'), std::string::npos) << line;
  EXPECT_NE(line.find(R"(id="x\" outcome=length\nI fake line")"), std::string::npos) << line;
}

IterationStats Iteration(int prompt, int generated, int running, int waiting, int used) {
  IterationStats s;
  s.num_prompt_tokens = prompt;
  s.num_generation_tokens = generated;
  s.num_running = running;
  s.num_waiting = waiting;
  s.kv_blocks_used = used;
  s.kv_blocks_total = 200;
  return s;
}

TEST(StatsLineTest, RatesCoverTheWindowSinceThePreviousLine) {
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  std::vector<std::string> lines;
  StatsLineLogger logger(t0, [&](const std::string& line) { lines.push_back(line); });
  logger.OnIteration(Iteration(/*prompt=*/300, /*generated=*/10, 2, 1, 50));
  logger.OnIteration(Iteration(/*prompt=*/0, /*generated=*/90, 3, 0, 60));
  ASSERT_TRUE(logger.MaybeWrite(t0 + absl::Seconds(10)));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0],
            "stats: prompt 30.0 tokens/s, generation 10.0 tokens/s, running 3 reqs, waiting 0 "
            "reqs, paused 0 reqs, KV cache 30.0% (60/200 blocks), prefix cache hits 0.0%, "
            "preemptions 0");
  // The next window starts where the line was written: 40 tokens in 4 s.
  logger.OnIteration(Iteration(0, 40, 3, 0, 62));
  ASSERT_TRUE(logger.MaybeWrite(t0 + absl::Seconds(14)));
  EXPECT_NE(lines[1].find("generation 10.0 tokens/s, running 3 reqs"), std::string::npos)
      << lines[1];
}

TEST(StatsLineTest, AnIdleServerStaysQuietAfterSayingItWentIdle) {
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  std::vector<std::string> lines;
  StatsLineLogger logger(t0, [&](const std::string& line) { lines.push_back(line); });
  EXPECT_FALSE(logger.MaybeWrite(t0 + absl::Seconds(10)));  // nothing ever happened
  logger.OnIteration(Iteration(5, 1, 1, 0, 1));
  EXPECT_TRUE(logger.MaybeWrite(t0 + absl::Seconds(20)));
  // The request ended during the next window: one line says so (running 0)...
  logger.OnIteration(Iteration(0, 0, 0, 0, 0));
  EXPECT_TRUE(logger.MaybeWrite(t0 + absl::Seconds(30)));
  EXPECT_NE(lines.back().find("running 0 reqs"), std::string::npos) << lines.back();
  // ...then silence, whatever the engine's idle iterations report.
  logger.OnIteration(Iteration(0, 0, 0, 0, 0));
  EXPECT_FALSE(logger.MaybeWrite(t0 + absl::Seconds(40)));
  EXPECT_FALSE(logger.MaybeWrite(t0 + absl::Seconds(50)));
  EXPECT_EQ(lines.size(), 2u);
}

TEST(StatsLineTest, ZeroIntervalIsOff) {
  StatsLineLogger logger(absl::ZeroDuration());
  logger.OnIteration(Iteration(5, 1, 1, 0, 1));  // ignored; no thread to write
}

}  // namespace
}  // namespace kvserve
