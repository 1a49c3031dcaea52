// LogRateLimiter with explicit times: at most N lines per site per window,
// the dropped ones reported with the site's next written line.
#include "base/log_rate_limiter.h"

#include "gtest/gtest.h"

namespace kvserve {
namespace {

TEST(LogRateLimiterTest, WritesNPerWindowThenReportsWhatItDropped) {
  LogRateLimiter limiter(3, absl::Minutes(1));
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  for (int i = 0; i < 3; ++i) {
    const auto d = limiter.Admit("a.cc:1", t0 + absl::Seconds(i));
    EXPECT_TRUE(d.write);
    EXPECT_EQ(d.suppressed, 0);
  }
  for (int i = 0; i < 997; ++i) EXPECT_FALSE(limiter.Admit("a.cc:1", t0 + absl::Seconds(10)).write);
  // Another site has its own budget.
  EXPECT_TRUE(limiter.Admit("b.cc:2", t0 + absl::Seconds(10)).write);
  // The next window: the first line carries the count of those dropped.
  const auto next = limiter.Admit("a.cc:1", t0 + absl::Seconds(60));
  EXPECT_TRUE(next.write);
  EXPECT_EQ(next.suppressed, 997);
  EXPECT_EQ(limiter.Admit("a.cc:1", t0 + absl::Seconds(61)).suppressed, 0);
}

}  // namespace
}  // namespace kvserve
