// Routing across replicas (client/replica_set.h, docs/routing.md): target
// parsing and DNS, least-in-flight selection, marking down, and the retry
// rule, the last through real gRPC on loopback against small in-process
// servers that answer, refuse with UNAVAILABLE, or fail after streaming.
#include <grpcpp/grpcpp.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "absl/strings/match.h"
#include "client/client.h"
#include "client/replica_set.h"
#include "gtest/gtest.h"

namespace kvserve {
namespace {

// A channel that is never dialled in the selection tests (channels connect lazily).
std::shared_ptr<grpc::Channel> LazyChannel(const std::string& address, const std::string&) {
  return grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
}

std::unique_ptr<ReplicaSet> MakeSet(std::vector<std::string> targets, RoutingOptions options = {}) {
  auto set = ReplicaSet::Create(targets, LazyChannel, options);
  EXPECT_TRUE(set.ok()) << set.status();
  return set.ok() ? *std::move(set) : nullptr;
}

TEST(ReplicaSetTest, ListsAreSplitAndBadTargetsNamed) {
  auto set = MakeSet({"127.0.0.1:1001, 127.0.0.1:1002", "127.0.0.1:1003"});
  ASSERT_NE(set, nullptr);
  std::vector<std::string> addresses;
  for (const ReplicaStats& s : set->Stats()) addresses.push_back(s.address);
  EXPECT_EQ(addresses, (std::vector<std::string>{"127.0.0.1:1001", "127.0.0.1:1002", "127.0.0.1:1003"}));

  auto empty_entry = ReplicaSet::Create({"127.0.0.1:1,,127.0.0.1:2"}, LazyChannel);
  EXPECT_EQ(empty_entry.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(empty_entry.status().message().find("empty entry"), absl::string_view::npos);
  auto authority = ReplicaSet::Create({"dns://8.8.8.8/kvserve:50051"}, LazyChannel);
  EXPECT_NE(authority.status().message().find("only dns:///NAME:PORT"), absl::string_view::npos);
  auto no_port = ReplicaSet::Create({"dns:///kvserve"}, LazyChannel);
  EXPECT_NE(no_port.status().message().find("target \"dns:///kvserve\": expected dns:///NAME:PORT"),
            absl::string_view::npos);
  EXPECT_EQ(ReplicaSet::Create({}, LazyChannel).status().code(), absl::StatusCode::kInvalidArgument);
  RoutingOptions bad;
  bad.down_max = absl::Milliseconds(1);
  EXPECT_NE(ReplicaSet::Create({"127.0.0.1:1"}, LazyChannel, bad).status().message().find("down_initial"),
            absl::string_view::npos);
}

TEST(ReplicaSetTest, DnsTargetsResolveToOneReplicaPerAddress) {
  auto numeric = MakeSet({"dns:///127.0.0.1:4711"});
  ASSERT_NE(numeric, nullptr);
  ASSERT_EQ(numeric->Stats().size(), 1u);
  EXPECT_EQ(numeric->Stats()[0].address, "127.0.0.1:4711");
  EXPECT_EQ(numeric->Stats()[0].target, "dns:///127.0.0.1:4711");
  auto v6 = MakeSet({"dns:///[::1]:4711"});
  ASSERT_NE(v6, nullptr);
  EXPECT_EQ(v6->Stats()[0].address, "[::1]:4711");
}

TEST(ReplicaSetTest, DnsNamesAreResolvedAgain) {
  std::mutex mu;
  std::vector<std::string> answer = {"10.0.0.1:7", "10.0.0.2:7"};
  bool fail = false;
  RoutingOptions options;
  options.resolve = [&](const std::string& host,
                        const std::string& port) -> absl::StatusOr<std::vector<std::string>> {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_EQ(host, "kvserve");
    EXPECT_EQ(port, "7");
    if (fail) return absl::UnavailableError("no answer");
    return answer;
  };
  auto set = MakeSet({"dns:///kvserve:7"}, options);
  ASSERT_NE(set, nullptr);
  ASSERT_EQ(set->Stats().size(), 2u);
  // One address goes, one comes: the gone one is never picked again.
  {
    std::lock_guard<std::mutex> lock(mu);
    answer = {"10.0.0.2:7", "10.0.0.3:7"};
  }
  ASSERT_TRUE(set->Refresh().ok());
  std::vector<ReplicaStats> stats = set->Stats();
  ASSERT_EQ(stats.size(), 3u);
  EXPECT_FALSE(stats[0].listed);
  EXPECT_TRUE(stats[1].listed);
  EXPECT_EQ(stats[2].address, "10.0.0.3:7");
  for (int i = 0; i < 4; ++i) EXPECT_NE(set->Acquire()->address(), "10.0.0.1:7");
  // A failed lookup keeps the replicas as they were.
  {
    std::lock_guard<std::mutex> lock(mu);
    fail = true;
  }
  EXPECT_FALSE(set->Refresh().ok());
  int listed = 0;
  for (const ReplicaStats& s : set->Stats()) listed += s.listed;
  EXPECT_EQ(listed, 2);
  // The first lookup must succeed, and its error names the target.
  auto never = ReplicaSet::Create({"dns:///kvserve:7"}, LazyChannel, options);
  EXPECT_EQ(never.status().message(), "target \"dns:///kvserve:7\": no answer");
}

TEST(ReplicaSetTest, FewestInFlightWinsAndTiesGoRoundRobin) {
  auto set = MakeSet({"127.0.0.1:1001,127.0.0.1:1002,127.0.0.1:1003"});
  ASSERT_NE(set, nullptr);
  // Idle replicas: one after the other.
  Replica* a = set->Acquire();
  Replica* b = set->Acquire();
  Replica* c = set->Acquire();
  EXPECT_EQ(a->address(), "127.0.0.1:1001");
  EXPECT_EQ(b->address(), "127.0.0.1:1002");
  EXPECT_EQ(c->address(), "127.0.0.1:1003");
  // Each holds one call; b finishes: b has the fewest and is chosen, twice
  // in a row if it finishes again.
  set->Release(b, grpc::StatusCode::OK);
  EXPECT_EQ(set->Acquire(), b);
  set->Release(b, grpc::StatusCode::OK);
  EXPECT_EQ(set->Acquire(), b);
  // Now 1, 1, 1 in flight again; a second call each, then a's two end.
  Replica* second[3] = {set->Acquire(), set->Acquire(), set->Acquire()};
  EXPECT_NE(second[0], second[1]);
  EXPECT_NE(second[1], second[2]);
  EXPECT_NE(second[0], second[2]);
  set->Release(a, grpc::StatusCode::OK);
  set->Release(a, grpc::StatusCode::OK);
  EXPECT_EQ(set->Acquire(), a);
  std::vector<int> in_flight;
  for (const ReplicaStats& s : set->Stats()) in_flight.push_back(s.in_flight);
  EXPECT_EQ(in_flight, (std::vector<int>{1, 2, 2}));
}

TEST(ReplicaSetTest, UnavailableMarksDownUntilTheBackOffEnds) {
  RoutingOptions long_backoff;
  long_backoff.down_initial = absl::Hours(1);
  long_backoff.down_max = absl::Hours(2);
  auto set = MakeSet({"127.0.0.1:1001,127.0.0.1:1002"}, long_backoff);
  ASSERT_NE(set, nullptr);
  Replica* a = set->Acquire();
  set->Release(a, grpc::StatusCode::UNAVAILABLE);
  EXPECT_TRUE(set->Stats()[0].down);
  // Skipped while the other is up, even with calls in flight on the other.
  Replica* b = set->Acquire();
  EXPECT_NE(b, a);
  EXPECT_NE(set->Acquire(), a);
  set->Release(b, grpc::StatusCode::OK);
  set->Release(b, grpc::StatusCode::OK);
  // Errors that are the caller's doing (cancelled, bad request) mark nothing.
  Replica* c = set->Acquire();
  set->Release(c, grpc::StatusCode::CANCELLED);
  set->Release(set->Acquire(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_FALSE(set->Stats()[1].down);
  // When all are down, the one whose back-off ends first is still tried.
  set->Release(set->Acquire(), grpc::StatusCode::UNAVAILABLE);  // b: down, 1 h
  EXPECT_EQ(set->Acquire(), a);  // a went down first, so its back-off ends first
  const ReplicaStats stats = set->Stats()[0];
  EXPECT_EQ(stats.unavailable, 1);
  EXPECT_EQ(stats.attempts, 2);
}

TEST(ReplicaSetTest, AMarkedDownReplicaComesBack) {
  RoutingOptions short_backoff;
  short_backoff.down_initial = absl::Milliseconds(1);
  short_backoff.down_max = absl::Milliseconds(1);
  auto set = MakeSet({"127.0.0.1:1001,127.0.0.1:1002"}, short_backoff);
  ASSERT_NE(set, nullptr);
  Replica* a = set->Acquire();
  set->Release(a, grpc::StatusCode::UNAVAILABLE);
  // Wait on the condition (generous deadline), not on a sleep.
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (set->Stats()[0].down && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(1));
  ASSERT_FALSE(set->Stats()[0].down);
  Replica* b = set->Acquire();  // busy now, so a (idle and up) goes next
  EXPECT_NE(b, a);
  EXPECT_EQ(set->Acquire(), a);
}

TEST(ReplicaSetTest, TriedReplicasGoLast) {
  auto set = MakeSet({"127.0.0.1:1001,127.0.0.1:1002,127.0.0.1:1003"});
  ASSERT_NE(set, nullptr);
  Replica* a = set->Acquire();
  Replica* b = set->Acquire();
  set->Release(a, grpc::StatusCode::OK);
  set->Release(b, grpc::StatusCode::OK);
  Replica* c = set->Acquire();  // 1003, and held: the busiest
  EXPECT_EQ(c->address(), "127.0.0.1:1003");
  EXPECT_TRUE(set->HasUntried({a, b}));
  EXPECT_EQ(set->Acquire({a, b}), c);
  EXPECT_FALSE(set->HasUntried({a, b, c}));
}

// ---- Through gRPC: small in-process servers on loopback. ----

enum class Behavior { kServe, kRefuse, kFailAfterTokens, kHold };

// Writes `n` one-token messages, then ends with `end`; deletes itself.
class TokenWriter final : public grpc::ServerWriteReactor<v1::GenerateResponse> {
 public:
  TokenWriter(int n, grpc::Status end) : n_(n), end_(std::move(end)) {}
  void Begin() { Next(); }
  void OnWriteDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status(grpc::StatusCode::CANCELLED, "write failed"));
      return;
    }
    Next();
  }
  void OnDone() override { delete this; }

 private:
  void Next() {
    if (sent_ == n_) {
      Finish(end_);
      return;
    }
    message_.Clear();
    message_.add_token_ids(sent_++);
    StartWrite(&message_);
  }
  const int n_;
  const grpc::Status end_;
  int sent_ = 0;
  v1::GenerateResponse message_;
};

// Streams the requested tokens, or refuses with UNAVAILABLE (like a draining
// kvserve), or fails with UNAVAILABLE after two messages (like a replica
// that dies mid-stream), or holds each call until released. The callback
// API, as kvserve's own server: no thread is blocked by a held call.
class FakeReplica final : public v1::Inference::CallbackService {
 public:
  explicit FakeReplica(Behavior behavior) : behavior_(behavior) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
  }
  ~FakeReplica() override {
    Release();
    server_->Shutdown();
    server_->Wait();
  }
  std::string target() const { return "127.0.0.1:" + std::to_string(port_); }
  int calls() {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }
  /// Waits (generous deadline) until `n` calls have arrived.
  bool WaitForCalls(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(30), [&] { return calls_ >= n; });
  }
  /// Lets the held calls (and every later one) go on.
  void Release() {
    std::vector<TokenWriter*> held;
    {
      std::lock_guard<std::mutex> lock(mu_);
      released_ = true;
      held.swap(held_);
    }
    for (TokenWriter* w : held) w->Begin();
  }

  grpc::ServerWriteReactor<v1::GenerateResponse>* GenerateStream(
      grpc::CallbackServerContext*, const v1::GenerateRequest* request) override {
    TokenWriter* writer = nullptr;
    switch (behavior_) {
      case Behavior::kRefuse:
        writer = new TokenWriter(0, grpc::Status(grpc::StatusCode::UNAVAILABLE, "the server is shutting down"));
        break;
      case Behavior::kFailAfterTokens:
        writer = new TokenWriter(2, grpc::Status(grpc::StatusCode::UNAVAILABLE, "connection lost"));
        break;
      case Behavior::kServe:
      case Behavior::kHold:
        writer = new TokenWriter(static_cast<int>(request->stopping().max_new_tokens()), grpc::Status::OK);
        break;
    }
    bool begin = true;
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++calls_;
      cv_.notify_all();
      if (behavior_ == Behavior::kHold && !released_) {
        held_.push_back(writer);
        begin = false;
      }
    }
    if (begin) writer->Begin();
    return writer;
  }
  grpc::ServerUnaryReactor* Generate(grpc::CallbackServerContext* context,
                                     const v1::GenerateRequest* request,
                                     v1::GenerateResponse* response) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++calls_;
    }
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    if (behavior_ != Behavior::kServe) {
      reactor->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "the server is shutting down"));
      return reactor;
    }
    for (uint32_t i = 0; i < request->stopping().max_new_tokens(); ++i) response->add_token_ids(i);
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

 private:
  const Behavior behavior_;
  int port_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  int calls_ = 0;
  bool released_ = false;
  std::vector<TokenWriter*> held_;
  std::unique_ptr<grpc::Server> server_;  // declared last: shut down before the rest goes
};

v1::GenerateRequest Tokens(uint32_t n) {
  v1::GenerateRequest request;
  request.mutable_token_ids()->add_ids(1);
  request.mutable_stopping()->set_max_new_tokens(n);
  return request;
}

std::unique_ptr<Client> Connect(const std::string& targets) {
  ClientOptions options;
  options.targets = {targets};
  // A replica marked down stays down for the whole test, however slow the machine.
  options.routing.down_initial = absl::Hours(1);
  options.routing.down_max = absl::Hours(1);
  auto client = Client::Connect(options);
  EXPECT_TRUE(client.ok()) << client.status();
  return client.ok() ? *std::move(client) : nullptr;
}

// A loopback port with nothing listening (a replica that was killed).
std::string DeadTarget() {
  auto probe = std::make_unique<FakeReplica>(Behavior::kServe);
  const std::string target = probe->target();
  probe.reset();
  return target;
}

TEST(ClientRoutingTest, UnavailableBeforeAnyTokenFailsOverToAnotherReplica) {
  FakeReplica draining(Behavior::kRefuse), good(Behavior::kServe);
  const std::string dead = DeadTarget();
  auto client = Connect(draining.target() + "," + dead + "," + good.target());
  // The first pick is the first listed: refused, then dead, then served.
  StreamResult r = client->GenerateStream(Tokens(3));
  ASSERT_TRUE(r.status.ok()) << r.status.error_message();
  EXPECT_EQ(r.response.token_ids_size(), 3);
  EXPECT_EQ(r.attempts, 3);
  EXPECT_EQ(r.failovers, 2);
  EXPECT_EQ(r.replica, good.target());
  EXPECT_EQ(draining.calls(), 1);
  // Both failed replicas are down now: the next calls go straight to the good one.
  for (int i = 0; i < 3; ++i) {
    StreamResult next = client->GenerateStream(Tokens(1));
    EXPECT_EQ(next.attempts, 1);
    EXPECT_EQ(next.replica, good.target());
  }
  // Unary calls follow the same rule.
  auto unary = Connect(draining.target() + "," + good.target())->Generate(Tokens(2));
  ASSERT_TRUE(unary.ok()) << unary.status();
  EXPECT_EQ(unary->token_ids_size(), 2);
}

TEST(ClientRoutingTest, ADnsNameIsOneReplicaPerAddress) {
  // localhost often resolves to ::1 and 127.0.0.1; the server listens on
  // 127.0.0.1 only, so a ::1 replica refuses and its calls fail over.
  FakeReplica good(Behavior::kServe);
  const std::string port = good.target().substr(good.target().rfind(':') + 1);
  ClientOptions options;
  options.targets = {"dns:///localhost:" + port};
  auto client = Client::Connect(options);
  if (!client.ok()) GTEST_SKIP() << "localhost does not resolve here: " << client.status();
  std::vector<ReplicaStats> stats = (*client)->replica_stats();
  ASSERT_GE(stats.size(), 1u);
  for (const ReplicaStats& s : stats) {
    EXPECT_EQ(s.target, "dns:///localhost:" + port);
    EXPECT_TRUE(absl::EndsWith(s.address, ":" + port)) << s.address;
  }
  for (size_t i = 0; i < stats.size() + 1; ++i) {
    StreamResult r = (*client)->GenerateStream(Tokens(2));
    ASSERT_TRUE(r.status.ok()) << r.status.error_message();
    EXPECT_EQ(r.replica, "127.0.0.1:" + port);
  }
}

TEST(ClientRoutingTest, AStreamThatSentTokensIsNeverResent) {
  FakeReplica dies(Behavior::kFailAfterTokens), good(Behavior::kServe);
  ClientOptions options;
  options.targets = {dies.target() + "," + good.target()};
  options.retry.max_attempts = 5;  // even with retries on
  auto client = Client::Connect(options);
  ASSERT_TRUE(client.ok());
  StreamResult r = (*client)->GenerateStream(Tokens(8));
  EXPECT_EQ(r.status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(r.status.error_message(), "connection lost");
  EXPECT_EQ(r.response.token_ids_size(), 2);  // what arrived, nothing twice
  EXPECT_EQ(r.attempts, 1);
  EXPECT_EQ(r.replica, dies.target());
  EXPECT_EQ(good.calls(), 0);
}

TEST(ClientRoutingTest, EveryReplicaRefusingIsOneClearError) {
  FakeReplica a(Behavior::kRefuse), b(Behavior::kRefuse);
  auto client = Connect(a.target() + "," + b.target());
  StreamResult r = client->GenerateStream(Tokens(2));
  EXPECT_EQ(r.status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(r.status.error_message(), "the server is shutting down");
  EXPECT_EQ(r.attempts, 2);  // each replica once, no more without a retry policy
  EXPECT_EQ(a.calls() + b.calls(), 2);
}

TEST(ClientRoutingTest, AsyncStreamsSpreadByInFlightAndFailOver) {
  FakeReplica held1(Behavior::kHold), held2(Behavior::kHold), refusing(Behavior::kRefuse);
  auto client = Connect(held1.target() + "," + held2.target());
  std::mutex mu;
  std::condition_variable cv;
  std::vector<StreamResult> results;
  auto on_done = [&](StreamResult r) {
    std::lock_guard<std::mutex> lock(mu);
    results.push_back(std::move(r));
    cv.notify_all();
  };
  // Four streams held open: two on each replica, by in-flight count.
  for (int i = 0; i < 4; ++i) client->StartGenerateStream(Tokens(2), {}, on_done);
  ASSERT_TRUE(held1.WaitForCalls(2));
  ASSERT_TRUE(held2.WaitForCalls(2));
  for (const ReplicaStats& s : client->replica_stats()) EXPECT_EQ(s.in_flight, 2) << s.address;
  held1.Release();
  held2.Release();
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(30), [&] { return results.size() == 4; }));
  }
  EXPECT_EQ(held1.calls(), 2);
  EXPECT_EQ(held2.calls(), 2);
  for (const StreamResult& r : results) EXPECT_TRUE(r.status.ok()) << r.status.error_message();

  // An async stream refused before any token moves to the other replica.
  auto failing_over = Connect(refusing.target() + "," + held1.target());
  results.clear();
  failing_over->StartGenerateStream(Tokens(3), {}, on_done);
  std::unique_lock<std::mutex> lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(30), [&] { return results.size() == 1; }));
  EXPECT_TRUE(results[0].status.ok()) << results[0].status.error_message();
  EXPECT_EQ(results[0].response.token_ids_size(), 3);
  EXPECT_EQ(results[0].failovers, 1);
  EXPECT_EQ(results[0].replica, held1.target());
}

TEST(ClientRoutingTest, DroppingTheClientWaitsForItsAsyncStreams) {
  // cancellation_test's shutdown test drops its Client with streams in
  // flight. gRPC's callback calls need their channel until they end (two
  // earlier versions, which freed the channels first or inside the last
  // OnDone, corrupted gRPC's state: later tests in the process crashed).
  FakeReplica held(Behavior::kHold);
  auto client = Connect(held.target());
  std::mutex mu;
  std::condition_variable cv;
  int done = 0;
  for (int i = 0; i < 3; ++i) {
    client->StartGenerateStream(Tokens(2), {}, [&](StreamResult r) {
      EXPECT_TRUE(r.status.ok()) << r.status.error_message();
      std::lock_guard<std::mutex> lock(mu);
      ++done;
      cv.notify_all();
    });
  }
  ASSERT_TRUE(held.WaitForCalls(3));
  std::thread releaser([&] {
    // Once the destructor waits (it holds nothing the streams need).
    absl::SleepFor(absl::Milliseconds(20));
    held.Release();
  });
  client.reset();  // returns once all three ended
  releaser.join();
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(done, 3);
}

}  // namespace
}  // namespace kvserve
