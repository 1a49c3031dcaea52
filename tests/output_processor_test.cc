// The output stage on its own thread, fed scripted engine events: what the
// client sees for a stop string (held until the engine has let go of the
// sequence), a cancel racing that stop, and the stats it adds. Then through a
// real engine: a stop-string finish leaves no KV blocks and no live request
// by the time the client sees it.
#include "engine/core/output_processor.h"

#include <condition_variable>
#include <mutex>

#include "engine/text/byte_tokenizer.h"
#include "gtest/gtest.h"
#include "tests/engine_test_util.h"

namespace kvserve {
namespace {

using testing::CollectingSink;

int32_t Byte(char c) { return static_cast<int32_t>(static_cast<unsigned char>(c)) + ByteTokenizer::kByteOffset; }

// Records the stop requests and each iteration's stats, from the output thread.
class Recorder final : public StatsObserver {
 public:
  void OnIteration(const IterationStats& stats) override {
    std::lock_guard<std::mutex> lock(mu_);
    generation_tokens_ += stats.num_generation_tokens;
    first_tokens_ += static_cast<int>(stats.time_to_first_token_s.size());
    finishes_ += static_cast<int>(stats.e2e_latency_s.size());
  }
  void OnStopRequested(SeqId id) {
    std::lock_guard<std::mutex> lock(mu_);
    stops_.push_back(id);
    cv_.notify_all();
  }
  bool WaitForStop(SeqId id) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(10),
                        [&] { return std::find(stops_.begin(), stops_.end(), id) != stops_.end(); });
  }
  int generation_tokens() { std::lock_guard<std::mutex> l(mu_); return generation_tokens_; }
  int first_tokens() { std::lock_guard<std::mutex> l(mu_); return first_tokens_; }
  int finishes() { std::lock_guard<std::mutex> l(mu_); return finishes_; }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<SeqId> stops_;
  int generation_tokens_ = 0, first_tokens_ = 0, finishes_ = 0;
};

EngineIterationOutput Iteration(std::vector<EngineEvent> events) {
  EngineIterationOutput out;
  out.events = std::move(events);
  out.stats.time = absl::Now();
  return out;
}

RequestAdded Added(SeqId id, std::shared_ptr<RequestSink> sink, std::vector<std::string> stop) {
  RequestAdded added;
  added.id = id;
  added.sink = std::move(sink);
  added.stop = std::move(stop);
  added.prompt_tokens = 3;
  added.arrival = absl::Now();
  return added;
}

class OutputProcessorTest : public ::testing::Test {
 protected:
  ByteTokenizer tokenizer_{300};
  Recorder recorder_;
  OutputProcessor output_{&tokenizer_, &recorder_, [this](SeqId id) { recorder_.OnStopRequested(id); },
                          [] {}};
};

TEST_F(OutputProcessorTest, StopStringFinishIsHeldUntilTheEngineLetsGo) {
  auto sink = std::make_shared<CollectingSink>();
  output_.Push(Iteration({Added(1, sink, {"lo"}), TokenSampled{1, Byte('h')}}));
  output_.Push(Iteration({TokenSampled{1, Byte('e')}}));
  output_.Push(Iteration({TokenSampled{1, Byte('l')}}));
  output_.Push(Iteration({TokenSampled{1, Byte('l')}}));
  output_.Push(Iteration({TokenSampled{1, Byte('o')}}));
  ASSERT_TRUE(recorder_.WaitForStop(1));
  EXPECT_FALSE(sink->done()) << "the finish went out before the engine freed the sequence";
  // A token the engine ran before it saw the stop: not the client's.
  output_.Push(Iteration({TokenSampled{1, Byte('!')}, StopApplied{1}}));
  ASSERT_TRUE(sink->WaitDone(absl::Seconds(10)));
  EXPECT_EQ(sink->finish_reason, FinishReason::kStop);
  EXPECT_EQ(sink->text, "hel");
  EXPECT_EQ(sink->completion_tokens, 5u);
  EXPECT_EQ(sink->prompt_tokens, 3u);
  output_.Stop();
  EXPECT_EQ(recorder_.generation_tokens(), 5);
  EXPECT_EQ(recorder_.first_tokens(), 1);
  EXPECT_EQ(recorder_.finishes(), 1);
}

TEST_F(OutputProcessorTest, CancelRacingAStopStringStillEndsWithTheStop) {
  auto sink = std::make_shared<CollectingSink>();
  output_.Push(Iteration({Added(7, sink, {"b"}), TokenSampled{7, Byte('a')},
                          TokenSampled{7, Byte('b')}}));
  ASSERT_TRUE(recorder_.WaitForStop(7));
  output_.Push(Iteration({RequestAborted{7, absl::CancelledError("request cancelled by the client")}}));
  ASSERT_TRUE(sink->WaitDone(absl::Seconds(10)));
  EXPECT_TRUE(sink->status.ok()) << sink->status;
  EXPECT_EQ(sink->finish_reason, FinishReason::kStop);
  EXPECT_EQ(sink->text, "a");
}

TEST_F(OutputProcessorTest, EngineFinishAndStopStringOnTheSameTokenNeedNoStopRequest) {
  auto sink = std::make_shared<CollectingSink>();
  output_.Push(Iteration({Added(3, sink, {"z"}), TokenSampled{3, Byte('z'), FinishReason::kLength}}));
  ASSERT_TRUE(sink->WaitDone(absl::Seconds(10)));
  EXPECT_EQ(sink->finish_reason, FinishReason::kStop);
  EXPECT_EQ(sink->text, "");
}

TEST_F(OutputProcessorTest, AbortsReachTheSinkAndStopDrainsTheQueue) {
  auto sink = std::make_shared<CollectingSink>();
  output_.Push(Iteration({Added(4, sink, {}), TokenSampled{4, Byte('x')}}));
  output_.Push(Iteration({RequestAborted{4, absl::UnavailableError("the server is shutting down")}}));
  output_.Stop();  // everything queued before Stop is delivered
  ASSERT_TRUE(sink->done());
  EXPECT_EQ(sink->status.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(sink->text, "x");
}

// A client that saw its request end and then scrapes /metrics must see that
// iteration's stats (its KV blocks back, its tokens counted): the stats go
// to the observer before the outputs go to the sinks. The sink here looks at
// the observer at the moment the final output arrives; no timing involved.
class StatsAtFinishSink final : public RequestSink {
 public:
  explicit StatsAtFinishSink(Recorder& recorder) : recorder_(recorder) {}
  void OnOutput(RequestOutput output) override {
    if (output.finish_reason != FinishReason::kNone) {
      finishes_seen_ = recorder_.finishes();
      tokens_seen_ = recorder_.generation_tokens();
      inner_.OnOutput(std::move(output));
    }
  }
  void OnAbort(absl::Status status) override { inner_.OnAbort(std::move(status)); }
  bool IsCancelled() const override { return false; }
  bool WaitDone() { return inner_.WaitDone(absl::Seconds(10)); }
  int finishes_seen() const { return finishes_seen_; }
  int tokens_seen() const { return tokens_seen_; }

 private:
  Recorder& recorder_;
  testing::CollectingSink inner_;
  int finishes_seen_ = -1;  // written on the output thread before inner_ is done
  int tokens_seen_ = -1;
};

TEST_F(OutputProcessorTest, AnIterationsStatsArePublishedBeforeItsOutputsReachClients) {
  auto sink = std::make_shared<StatsAtFinishSink>(recorder_);
  output_.Push(Iteration({Added(5, sink, {}), TokenSampled{5, Byte('a')}}));
  output_.Push(Iteration({TokenSampled{5, Byte('b'), FinishReason::kLength}}));
  ASSERT_TRUE(sink->WaitDone());
  EXPECT_EQ(sink->finishes_seen(), 1) << "the client saw its end before the stats did";
  EXPECT_EQ(sink->tokens_seen(), 2);
}

// Through a real engine (the built-in model, byte tokenizer): a stop string
// in the middle of the greedy text ends the request there, and its blocks
// and its slot are free by the time the client sees the end.
TEST(EngineStopStringTest, StopStringFinishFreesTheSequenceBeforeTheClientSeesIt) {
  testing::TestEngine t = testing::MakeCpuEngine("");
  ASSERT_NE(t.engine, nullptr);
  const std::vector<int32_t> prompt = {ByteTokenizer::kBos, Byte('H'), Byte('i')};
  auto full = testing::RunToCompletion(*t.engine, testing::GreedyRequest(prompt, 24));
  ASSERT_EQ(full->finish_reason, FinishReason::kLength);
  ASSERT_GE(full->text.size(), 8u) << full->text;
  for (size_t cut = 1; cut + 2 <= full->text.size() && cut < 8; ++cut) {
    Request request = testing::GreedyRequest(prompt, 24);
    const std::string stop = full->text.substr(cut, 2);
    request.stopping.stop = {stop};
    auto sink = testing::RunToCompletion(*t.engine, std::move(request));
    EXPECT_EQ(sink->finish_reason, FinishReason::kStop) << "stop " << stop;
    EXPECT_EQ(sink->text, full->text.substr(0, full->text.find(stop))) << "stop " << stop;
    EXPECT_EQ(t.engine->num_used_blocks(), 0) << "stop " << stop;
    EXPECT_EQ(t.engine->num_live_requests(), 0) << "stop " << stop;
  }
}

}  // namespace
}  // namespace kvserve
