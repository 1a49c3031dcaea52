// The C++ client library against real servers: retries with backoff on
// UNAVAILABLE (server not up yet) and RESOURCE_EXHAUSTED (queue full),
// round-robin over several targets, TLS, asynchronous streams and
// cancellation tokens.
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"
#include "tests/server_test_util.h"
#include "tests/test_paths.h"

namespace kvserve::testing {
namespace {

int FreePort() {
  // Start and stop a server on port 0 to learn a free port.
  auto probe = StartTestServer(FixtureDir("tiny-llama-gqa"));
  const int port = probe->server->port();
  probe->Stop();
  return port;
}

TEST(ClientTest, RetriesUnavailableUntilTheServerComesUp) {
  const int port = FreePort();
  ClientOptions options;
  options.targets = {"127.0.0.1:" + std::to_string(port)};
  options.retry.max_attempts = 40;
  options.retry.initial_backoff = absl::Milliseconds(20);
  options.retry.max_backoff = absl::Milliseconds(100);
  auto client = Client::Connect(options);
  ASSERT_TRUE(client.ok());
  std::unique_ptr<TestServer> server;
  std::thread starter([&] {
    absl::SleepFor(absl::Milliseconds(300));
    ServerOptions server_options;
    server_options.port = port;
    server = std::make_unique<TestServer>();
    server->registry = std::make_shared<prometheus::Registry>();
    server->stats_logger = std::make_unique<PrometheusStatsLogger>(*server->registry);
    auto source = OpenModelSource(FixtureDir("tiny-llama-gqa"));
    server->engine = *Engine::Create({}, *std::move(source), std::make_unique<CpuBackend>(),
                                     server->stats_logger.get());
    server_options.host = "127.0.0.1";
    server_options.metrics_port = -1;
    server->server = *KvServer::Start(server_options, *server->engine, *server->registry);
  });
  auto response = (*client)->Generate(TokenRequest({1, 2, 3}, 4));
  starter.join();
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->token_ids_size(), 4);
  // Without retries the same situation fails at once.
  options.retry.max_attempts = 1;
  options.targets = {"127.0.0.1:" + std::to_string(FreePort())};
  auto no_retry = Client::Connect(options);
  EXPECT_EQ((*no_retry)->Generate(TokenRequest({1}, 1)).status().code(), absl::StatusCode::kUnavailable);
}

TEST(ClientTest, QueueFullIsResourceExhaustedAndRetriesSucceed) {
  EngineConfig config;
  config.max_num_seqs = 1;
  config.max_queued_requests = 0;
  // The built-in model (context 2048) so that the holding stream lasts seconds,
  // not the few milliseconds 480 tokens of a tiny fixture take.
  auto server = StartTestServer("", config);
  // Hold the only slot with a long stream (cancelled below).
  CancellationToken hold;
  CallOptions hold_options;
  hold_options.cancel = &hold;
  std::atomic<bool> holding{false};
  std::thread holder([&] {
    server->client->GenerateStream(TokenRequest({1, 2}, 2000), [&](const StreamChunk&) { holding = true; },
                                   hold_options);
  });
  while (!holding) absl::SleepFor(absl::Milliseconds(5));
  auto refused = server->client->Generate(TokenRequest({3}, 2));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(refused.status().message().find("max_queued_requests"), absl::string_view::npos);
  // A retrying client gets through once the slot frees.
  ClientOptions options;
  options.targets = {server->target()};
  options.retry.max_attempts = 50;
  options.retry.initial_backoff = absl::Milliseconds(10);
  options.retry.max_backoff = absl::Milliseconds(50);
  auto retrying = Client::Connect(options);
  std::thread releaser([&] {
    absl::SleepFor(absl::Milliseconds(100));
    hold.Cancel();
  });
  auto accepted = (*retrying)->Generate(TokenRequest({3}, 2));
  releaser.join();
  holder.join();
  ASSERT_TRUE(accepted.ok()) << accepted.status();
  EXPECT_EQ(accepted->token_ids_size(), 2);
}

TEST(ClientTest, RequestsGoRoundRobinOverTargets) {
  auto a = StartTestServer(FixtureDir("tiny-llama-gqa"));
  auto b = StartTestServer(FixtureDir("tiny-llama-gqa"));
  ClientOptions options;
  options.targets = {a->target(), b->target()};
  auto client = Client::Connect(options);
  for (int i = 0; i < 6; ++i) ASSERT_TRUE((*client)->Generate(TokenRequest({5}, 1)).ok());
  EXPECT_EQ(a->Metric("kvserve_requests_total{api=\"grpc\",outcome=\"length\"}"), 3);
  EXPECT_EQ(b->Metric("kvserve_requests_total{api=\"grpc\",outcome=\"length\"}"), 3);
}

TEST(ClientTest, AsyncStreamsAndCancellation) {
  auto server = StartTestServer(FixtureDir("tiny-llama-gqa"));
  std::mutex mu;
  std::condition_variable cv;
  int done = 0;
  std::vector<StreamResult> results(8);
  std::vector<int> chunks(8, 0);
  CancellationToken cancel_before_start;
  cancel_before_start.Cancel();
  for (int i = 0; i < 8; ++i) {
    CallOptions options;
    if (i == 7) options.cancel = &cancel_before_start;
    server->client->StartGenerateStream(
        TokenRequest({int32_t(20 + i)}, 5), [&, i](const StreamChunk&) { ++chunks[i]; },
        [&, i](StreamResult r) {
          std::lock_guard<std::mutex> lock(mu);
          results[i] = std::move(r);
          ++done;
          cv.notify_all();
        },
        options);
  }
  std::unique_lock<std::mutex> lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(30), [&] { return done == 8; }));
  for (int i = 0; i < 7; ++i) {
    EXPECT_TRUE(results[i].status.ok()) << results[i].status.error_message();
    EXPECT_EQ(results[i].response.token_ids_size(), 5);
    EXPECT_EQ(chunks[i], static_cast<int>(results[i].chunk_times.size()));
    EXPECT_LE(results[i].sent, results[i].first_chunk);
  }
  EXPECT_EQ(results[7].status.error_code(), grpc::StatusCode::CANCELLED);
}

TEST(ClientTest, TlsEndToEnd) {
  const std::string dir = ::testing::TempDir() + "/kvserve_tls";
  std::filesystem::create_directories(dir);
  const std::string cert = dir + "/cert.pem", key = dir + "/key.pem";
  const std::string command =
      "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost "
      "-addext subjectAltName=DNS:localhost -keyout " + key + " -out " + cert + " 2>/dev/null";
  ASSERT_EQ(std::system(command.c_str()), 0) << "openssl is needed (deploy/install-deps.sh)";
  ServerOptions options;
  options.tls_cert_file = cert;
  options.tls_key_file = key;
  auto server = StartTestServer(FixtureDir("tiny-llama-gqa"), {}, options);
  ASSERT_NE(server, nullptr);
  // Dial the address, check the certificate against the name it was issued
  // to (no DNS needed: minimal systems may not even resolve "localhost").
  ClientOptions tls;
  tls.targets = {"127.0.0.1:" + std::to_string(server->server->port())};
  tls.use_tls = true;
  tls.tls_root_certs_file = cert;
  tls.tls_server_name = "localhost";
  auto client = Client::Connect(tls);
  auto response = (*client)->Generate(TokenRequest({1, 2}, 3));
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->token_ids_size(), 3);
  // A certificate for another name is refused.
  ClientOptions wrong_name = tls;
  wrong_name.tls_server_name = "kvserve.example";
  CallOptions quick;
  quick.timeout = absl::Seconds(2);
  EXPECT_FALSE((*Client::Connect(wrong_name))->Generate(TokenRequest({1}, 1), quick).ok());
  // A plaintext client cannot talk to the TLS server.
  ClientOptions plain;
  plain.targets = tls.targets;
  auto insecure = Client::Connect(plain);
  EXPECT_FALSE((*insecure)->Generate(TokenRequest({1}, 1), quick).ok());
}

}  // namespace
}  // namespace kvserve::testing
