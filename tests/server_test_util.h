// A real kvserve server on a loopback port (engine on the CPU backend) and a
// real client channel to it, for tests that go through gRPC.
#pragma once

#include <memory>
#include <string>

#include "client/client.h"
#include "engine/core/engine.h"
#include "engine/core/metrics/prometheus_stats_logger.h"
#include "prometheus/registry.h"
#include "server/chat_setup.h"
#include "server/server.h"

namespace kvserve::testing {

struct TestServer {
  std::shared_ptr<prometheus::Registry> registry;
  std::unique_ptr<PrometheusStatsLogger> stats_logger;  // declared before the engine: outlives it
  std::unique_ptr<Engine> engine;
  ChatSetup chat;  // from the model directory's chat template, if any
  std::unique_ptr<KvServer> server;
  std::unique_ptr<Client> client;

  std::string target() const { return "127.0.0.1:" + std::to_string(server->port()); }
  /// GET /metrics from the server's HTTP endpoint.
  std::string ScrapeMetrics() const;
  /// The value of one sample line of /metrics (e.g. `kvserve_kv_blocks_used`), or -1.
  double Metric(const std::string& sample) const;
  void Stop();
  ~TestServer() { Stop(); }
};

/// Starts a server for `model_dir` ("" = the built-in default model), with
/// chat when the directory has a chat template.
std::unique_ptr<TestServer> StartTestServer(const std::string& model_dir,
                                            EngineConfig config = {},
                                            ServerOptions options = {});

/// A request with token-id input.
v1::GenerateRequest TokenRequest(const std::vector<int32_t>& ids, uint32_t max_new_tokens,
                                 bool ignore_eos = true);

}  // namespace kvserve::testing
