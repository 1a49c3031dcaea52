#include "tests/engine_test_util.h"

#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"

namespace kvserve::testing {

void CollectingSink::OnOutput(RequestOutput output) {
  std::lock_guard<std::mutex> lock(mu_);
  tokens.insert(tokens.end(), output.token_ids.begin(), output.token_ids.end());
  text += output.text;
  text_deltas.push_back(output.text);
  for (auto& row : output.logits) logits.push_back(std::move(row));
  for (auto& l : output.logprobs) logprobs.push_back(std::move(l));
  prompt_tokens = output.prompt_tokens;
  completion_tokens = output.completion_tokens;
  ++outputs_;
  if (output.finished()) {
    finish_reason = output.finish_reason;
    done_ = true;
    cv_.notify_all();
  }
}

void CollectingSink::OnAbort(absl::Status s) {
  std::lock_guard<std::mutex> lock(mu_);
  status = std::move(s);
  done_ = true;
  cv_.notify_all();
}

bool CollectingSink::WaitDone(absl::Duration timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, absl::ToChronoMilliseconds(timeout), [&] { return done_; });
}

bool CollectingSink::done() const {
  std::lock_guard<std::mutex> lock(mu_);
  return done_;
}

int CollectingSink::num_outputs() const {
  std::lock_guard<std::mutex> lock(mu_);
  return outputs_;
}

TestEngine MakeEngine(const std::string& model_dir, std::unique_ptr<Backend> backend,
                      EngineConfig config) {
  TestEngine t;
  t.registry = std::make_unique<prometheus::Registry>();
  t.stats_logger = std::make_unique<PrometheusStatsLogger>(*t.registry);
  auto source = OpenModelSource(model_dir);
  EXPECT_TRUE(source.ok()) << source.status();
  if (!source.ok()) return t;
  auto engine = Engine::Create(config, *std::move(source), std::move(backend), t.stats_logger.get());
  EXPECT_TRUE(engine.ok()) << engine.status();
  if (engine.ok()) t.engine = *std::move(engine);
  return t;
}

TestEngine MakeCpuEngine(const std::string& model_dir, EngineConfig config) {
  return MakeEngine(model_dir, std::make_unique<CpuBackend>(), std::move(config));
}

Request GreedyRequest(std::vector<int32_t> prompt, uint32_t max_new_tokens, bool capture_logits) {
  Request r;
  r.prompt = std::move(prompt);
  r.stopping.max_new_tokens = max_new_tokens;
  r.stopping.ignore_eos = true;
  r.capture_logits = capture_logits;
  return r;
}

std::shared_ptr<CollectingSink> RunToCompletion(Engine& engine, Request request) {
  auto sink = std::make_shared<CollectingSink>();
  absl::Status s = engine.Submit(std::move(request), sink);
  EXPECT_TRUE(s.ok()) << s;
  if (s.ok()) {
    EXPECT_TRUE(sink->WaitDone());
  }
  return sink;
}

}  // namespace kvserve::testing

namespace kvserve::testing {
double MetricValue(prometheus::Registry& registry, const std::string& name) {
  for (const prometheus::MetricFamily& family : registry.Collect()) {
    if (family.name != name || family.metric.empty()) continue;
    const prometheus::ClientMetric& m = family.metric[0];
    return family.type == prometheus::MetricType::Counter ? m.counter.value : m.gauge.value;
  }
  return -1;
}
}  // namespace kvserve::testing
