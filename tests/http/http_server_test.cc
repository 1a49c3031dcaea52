// The HTTP server in-process, through a real HTTP client on loopback
// (cpp-httplib): concurrent streams, a client that disconnects mid-stream,
// and shutdown with streams in flight. In-process so that ThreadSanitizer
// (deploy/run-tsan.sh) sees the I/O threads, the engine thread and the
// output thread meet. The request parser and the error mapping are tested
// directly at the end.
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "server/http/http_server.h"
#include "server/http/openai_error.h"
#include "server/http/openai_request.h"
#include "tests/server_test_util.h"

namespace kvserve::http {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;

// Waits on a condition with a generous deadline (CI is a loaded 2-core machine).
bool WaitFor(const std::function<bool()>& condition) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return condition();
}

struct StreamResult {
  int status = 0;
  std::vector<json> chunks;
  bool done = false;
};

class HttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = testing::StartTestServer("");
    ASSERT_NE(server_, nullptr);
    HttpServerOptions options;
    options.host = "127.0.0.1";
    options.port = 0;
    options.served_model_name = "m";
    auto http = HttpServer::Start(options, *server_->engine, server_->server->metrics());
    ASSERT_TRUE(http.ok()) << http.status();
    http_ = *std::move(http);
  }
  void TearDown() override {
    if (http_) http_->Shutdown(absl::Now());
    http_.reset();
    server_->Stop();
  }

  httplib::Client Client() {
    httplib::Client client("127.0.0.1", http_->port());
    client.set_read_timeout(60);
    return client;
  }

  // Streams a completion; `stop_after` > 0 hangs up after that many events.
  StreamResult Stream(const json& body, int stop_after = 0) {
    StreamResult result;
    std::string buffer;
    httplib::Client client = Client();
    httplib::Request request;
    request.method = "POST";
    request.path = "/v1/completions";
    request.body = body.dump();
    request.set_header("Content-Type", "application/json");
    request.content_receiver = [&](const char* data, size_t size, uint64_t, uint64_t) {
      buffer.append(data, size);
      size_t end;
      while ((end = buffer.find("\n\n")) != std::string::npos) {
        const std::string event = buffer.substr(0, end);
        buffer.erase(0, end + 2);
        if (event == "data: [DONE]") {
          result.done = true;
        } else {
          result.chunks.push_back(json::parse(event.substr(6)));
        }
        if (stop_after > 0 && static_cast<int>(result.chunks.size()) >= stop_after) return false;
      }
      return true;
    };
    httplib::Response response;
    httplib::Error error;
    client.send(request, response, error);
    result.status = response.status;
    return result;
  }

  std::unique_ptr<testing::TestServer> server_;
  std::unique_ptr<HttpServer> http_;
};

TEST_F(HttpServerTest, ConcurrentStreamsWithSeveralChoicesAllEnd) {
  constexpr int kStreams = 8;
  std::vector<StreamResult> results(kStreams);
  std::vector<std::thread> threads;
  for (int i = 0; i < kStreams; ++i) {
    threads.emplace_back([&, i] {
      results[i] = Stream({{"prompt", json::array({1, 40 + i, 50})}, {"max_tokens", 10},
                           {"ignore_eos", true}, {"n", 2}, {"stream", true},
                           {"stream_options", {{"include_usage", true}}}});
    });
  }
  for (std::thread& t : threads) t.join();
  for (const StreamResult& r : results) {
    EXPECT_EQ(r.status, 200);
    EXPECT_TRUE(r.done);
    ASSERT_FALSE(r.chunks.empty());
    EXPECT_EQ(r.chunks.back()["usage"]["completion_tokens"], 20);
    int finished = 0;
    for (const json& chunk : r.chunks) {
      for (const json& choice : chunk["choices"]) finished += !choice["finish_reason"].is_null();
    }
    EXPECT_EQ(finished, 2);
  }
  EXPECT_TRUE(WaitFor([&] { return server_->engine->num_live_requests() == 0; }));
  EXPECT_EQ(server_->engine->num_used_blocks(), 0);
}

TEST_F(HttpServerTest, HangingUpMidStreamCancelsAndFreesTheBlocks) {
  const StreamResult r = Stream({{"prompt", "Hello"}, {"max_tokens", 2000}, {"ignore_eos", true},
                                 {"stream", true}},
                                /*stop_after=*/2);
  EXPECT_EQ(r.chunks.size(), 2u);
  EXPECT_FALSE(r.done);
  EXPECT_TRUE(WaitFor([&] { return server_->engine->num_live_requests() == 0; }));
  EXPECT_EQ(server_->engine->num_used_blocks(), 0);
  EXPECT_TRUE(WaitFor([&] {
    return server_->Metric("kvserve_requests_total{api=\"http\",outcome=\"cancelled\"}") == 1;
  }));
}

TEST_F(HttpServerTest, ShutdownCancelsStreamsInFlightAndReturns) {
  std::atomic<bool> started{false};
  StreamResult result;
  std::thread client([&] {
    httplib::Client c = Client();
    httplib::Request request;
    request.method = "POST";
    request.path = "/v1/completions";
    request.body = json{{"prompt", "Hi"}, {"max_tokens", 2000}, {"ignore_eos", true},
                        {"stream", true}}.dump();
    request.content_receiver = [&](const char* data, size_t size, uint64_t, uint64_t) {
      started = true;
      return true;
    };
    httplib::Response response;
    httplib::Error error;
    c.send(request, response, error);
  });
  ASSERT_TRUE(WaitFor([&] { return started.load(); }));
  http_->Shutdown(absl::Now());  // no grace: the stream is cancelled
  client.join();
  EXPECT_TRUE(WaitFor([&] { return server_->engine->num_live_requests() == 0; }));
  EXPECT_EQ(server_->engine->num_used_blocks(), 0);
}

// docs/errors.md: a stream that fails after its 200 went out ends with an
// error event and [DONE]. The engine stopping under a running stream is the
// failure a test can cause (UNAVAILABLE: "the server is shutting down").
TEST_F(HttpServerTest, StreamThatFailsMidwayEndsWithAnErrorEventAndDone) {
  StreamResult result;
  std::thread client([&] {
    result = Stream(json{{"prompt", "Hi"}, {"max_tokens", 2000}, {"ignore_eos", true},
                         {"stream", true}});
  });
  ASSERT_TRUE(WaitFor([&] {
    return server_->engine->num_live_requests() == 1 && server_->engine->num_used_blocks() > 0;
  }));
  server_->engine->Stop();
  client.join();
  EXPECT_EQ(result.status, 200);
  EXPECT_TRUE(result.done);
  ASSERT_FALSE(result.chunks.empty());
  const json& last = result.chunks.back();
  ASSERT_TRUE(last.contains("error")) << last.dump();
  EXPECT_EQ(last["error"]["type"], "service_unavailable");
  EXPECT_THAT(last["error"]["message"].get<std::string>(), HasSubstr("shutting down"));
}

TEST_F(HttpServerTest, NonStreamingRepliesInParallel) {
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < 6; ++i) {
    threads.emplace_back([&, i] {
      httplib::Client c = Client();
      auto response = c.Post("/v1/completions",
                             json{{"prompt", json::array({1, 2 + i})}, {"max_tokens", 5},
                                  {"ignore_eos", true}, {"model", "m"}}
                                 .dump(),
                             "application/json");
      if (response && response->status == 200 &&
          json::parse(response->body)["usage"]["completion_tokens"] == 5) {
        ++ok;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(ok.load(), 6);
}

TEST(OpenAiRequestTest, MapsFieldsToTheGrpcRequest) {
  auto r = ParseOpenAiRequest(Endpoint::kCompletions, R"({
      "prompt": "hi", "max_completion_tokens": 7, "temperature": 0.5, "top_p": 0.9,
      "seed": 3, "stop": "x", "n": 2, "logprobs": 4, "top_k": -1, "min_p": 0.1,
      "repetition_penalty": 1.1, "presence_penalty": 0.2, "frequency_penalty": 0.3,
      "ignore_eos": true, "min_tokens": 2, "stream": true,
      "stream_options": {"include_usage": true}, "whatever": 1})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->generate.text(), "hi");
  EXPECT_EQ(r->generate.stopping().max_new_tokens(), 7u);
  EXPECT_EQ(r->max_tokens_name, "max_completion_tokens");
  EXPECT_FLOAT_EQ(r->generate.sampling().temperature(), 0.5f);
  EXPECT_EQ(r->generate.sampling().seed(), 3u);
  EXPECT_EQ(r->generate.sampling().top_k(), 0);
  EXPECT_EQ(r->generate.sampling().logprobs(), 4u);
  EXPECT_EQ(r->generate.sampling().min_new_tokens(), 2u);
  EXPECT_THAT(r->generate.stopping().stop(), ::testing::ElementsAre("x"));
  EXPECT_TRUE(r->generate.stopping().ignore_eos());
  EXPECT_EQ(r->n, 2);
  EXPECT_TRUE(r->stream && r->include_usage && r->logprobs);
  EXPECT_THAT(r->unknown_fields, ::testing::ElementsAre("whatever"));
}

TEST(OpenAiErrorTest, EngineMessagesNameTheHttpParameters) {
  const HttpError e = ToHttpError(
      absl::InvalidArgumentError("prompt (5 tokens) + stopping.max_new_tokens (9) = 14 exceeds"),
      CompletionParamNames("max_tokens"));
  EXPECT_EQ(e.http_status, 400);
  EXPECT_EQ(e.param, "max_tokens");
  EXPECT_THAT(e.message, HasSubstr("+ max_tokens (9)"));
  const HttpError chat = ToHttpError(
      absl::InvalidArgumentError("sampling.logprobs must be in [0, 20], got 30"),
      ChatParamNames("max_tokens"));
  EXPECT_EQ(chat.param, "top_logprobs");
  const HttpError full = ToHttpError(absl::ResourceExhaustedError("queue full"));
  EXPECT_EQ(full.http_status, 429);
  EXPECT_EQ(full.retry_after_s, 1);
  EXPECT_EQ(ToHttpError(absl::UnavailableError("stopping")).http_status, 503);
}

}  // namespace
}  // namespace kvserve::http
