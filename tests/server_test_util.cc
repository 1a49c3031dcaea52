#include "tests/server_test_util.h"

#include <httplib.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"

namespace kvserve::testing {

std::string TestServer::ScrapeMetrics() const {
  httplib::Client http("127.0.0.1", server->metrics_port());
  auto res = http.Get("/metrics");
  EXPECT_TRUE(res) << "GET /metrics failed";
  return res ? res->body : "";
}

double TestServer::Metric(const std::string& sample) const {
  for (absl::string_view line : absl::StrSplit(ScrapeMetrics(), '\n')) {
    if (line.size() > sample.size() && line.substr(0, sample.size()) == sample &&
        line[sample.size()] == ' ') {
      double value;
      if (absl::SimpleAtod(line.substr(sample.size() + 1), &value)) return value;
    }
  }
  return -1;
}

void TestServer::Stop() {
  client.reset();
  if (server) server->Shutdown();
  if (engine) engine->Stop();
}

std::unique_ptr<TestServer> StartTestServer(const std::string& model_dir, EngineConfig config,
                                            ServerOptions options) {
  auto t = std::make_unique<TestServer>();
  t->registry = std::make_shared<prometheus::Registry>();
  t->stats_logger = std::make_unique<PrometheusStatsLogger>(*t->registry);
  auto source = OpenModelSource(model_dir);
  EXPECT_TRUE(source.ok()) << source.status();
  if (!source.ok()) return nullptr;
  const std::optional<ChatTemplateSource> chat_template = source->chat_template;
  auto engine =
      Engine::Create(config, *std::move(source), std::make_unique<CpuBackend>(), t->stats_logger.get());
  EXPECT_TRUE(engine.ok()) << engine.status();
  if (!engine.ok()) return nullptr;
  t->engine = *std::move(engine);
  auto chat = SetUpChat(chat_template, *t->engine, /*required=*/false);
  EXPECT_TRUE(chat.ok()) << chat.status();
  if (!chat.ok()) return nullptr;
  t->chat = *std::move(chat);
  options.chat = t->chat.access;
  options.host = "127.0.0.1";
  options.port = 0;
  options.metrics_port = 0;
  auto server = KvServer::Start(options, *t->engine, *t->registry);
  EXPECT_TRUE(server.ok()) << server.status();
  if (!server.ok()) return nullptr;
  t->server = *std::move(server);
  ClientOptions client_options;
  client_options.targets = {t->target()};
  auto client = Client::Connect(client_options);
  EXPECT_TRUE(client.ok()) << client.status();
  t->client = *std::move(client);
  return t;
}

v1::GenerateRequest TokenRequest(const std::vector<int32_t>& ids, uint32_t max_new_tokens,
                                 bool ignore_eos) {
  v1::GenerateRequest r;
  for (int32_t id : ids) r.mutable_token_ids()->add_ids(id);
  r.mutable_stopping()->set_max_new_tokens(max_new_tokens);
  r.mutable_stopping()->set_ignore_eos(ignore_eos);
  return r;
}

}  // namespace kvserve::testing
