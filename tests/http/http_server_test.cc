// The HTTP server in-process, through a real HTTP client on loopback
// (cpp-httplib): concurrent streams, a client that disconnects mid-stream,
// and shutdown with streams in flight. In-process so that ThreadSanitizer
// (deploy/run-tsan.sh) sees the I/O threads, the engine thread and the
// output thread meet. The request parser, the framing rules, the CORS policy
// and the error mapping are tested directly at the end; the model's sampling
// defaults (generation_config.json, GGUF metadata) through a served model.
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "absl/strings/ascii.h"
#include "engine/loading/default_model.h"
#include "engine/loading/gguf_weights.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "server/http/cors_policy.h"
#include "server/http/http_server.h"
#include "server/http/openai_error.h"
#include "server/http/openai_request.h"
#include "server/http/request_framing.h"
#include "server/http/response_id.h"
#include "tests/gguf_builder.h"
#include "tests/server_test_util.h"
#include "tests/test_paths.h"

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

// Serves `model_path` over HTTP; the texts of a request's two choices when it
// gives no sampling field (issue 27 item 3: the model's defaults apply).
std::vector<std::string> ChoicesWithoutSamplingFields(const std::string& model_path) {
  auto server = testing::StartTestServer(model_path);
  EXPECT_NE(server, nullptr);
  if (server == nullptr) return {};
  HttpServerOptions options;
  options.host = "127.0.0.1";
  options.port = 0;
  auto http = HttpServer::Start(options, *server->engine, server->server->metrics());
  EXPECT_TRUE(http.ok()) << http.status();
  if (!http.ok()) return {};
  httplib::Client client("127.0.0.1", (*http)->port());
  client.set_read_timeout(60);
  auto response = client.Post("/v1/completions",
                              json{{"prompt", json::array({5, 6, 7})}, {"max_tokens", 16},
                                   {"ignore_eos", true}, {"n", 2}}
                                  .dump(),
                              "application/json");
  std::vector<std::string> texts;
  EXPECT_TRUE(response && response->status == 200) << (response ? response->body : "no reply");
  if (response && response->status == 200) {
    const json body = json::parse(response->body);
    for (const json& choice : body["choices"]) texts.push_back(choice["text"]);
  }
  (*http)->Shutdown(absl::Now());
  server->Stop();
  return texts;
}

// tiny-qwen2 with its generation_config.json replaced by `generation_config`.
std::string TinyQwen2With(const std::string& name, const std::string& generation_config) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(::testing::TempDir()) / (std::to_string(::getpid()) + "_" + name);
  fs::remove_all(dir);
  fs::copy(testing::FixtureDir("tiny-qwen2"), dir);
  std::ofstream(dir / "generation_config.json") << generation_config;
  return dir.string();
}

// A small random Llama as a GGUF file, with `general.sampling.temp` if given.
std::string RandomLlamaGguf(const std::string& name, std::optional<float> temp) {
  ModelConfig c = DefaultModelConfig();
  c.num_layers = 1;
  RandomWeightSource weights(c, 3);
  testing::GgufBuilder b;
  testing::AddLlamaMetadata(b, c, c.vocab_size);
  if (temp) b.F32("general.sampling.temp", *temp);
  for (const std::string& tensor : weights.TensorNames()) {
    const std::vector<int64_t> shape = weights.ShapeOf(tensor);
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::vector<float> w(n);
    weights.Fill(tensor, shape, 0, n, w.data());
    b.Tensor(*GgufTensorName(tensor), std::vector<uint64_t>(shape.rbegin(), shape.rend()),
             /*F32*/ 0, testing::F32Bytes(w));
  }
  return testing::WriteTemp(name, b.Build());
}

TEST(HttpSamplingDefaultsTest, TheModelsDefaultsApplyAndTemperatureIsOneWithout) {
  // tiny-qwen2's own file is greedy-in-Transformers ("do_sample": false) and
  // names no temperature: OpenAI's 1 applies, so two choices differ.
  std::vector<std::string> texts = ChoicesWithoutSamplingFields(testing::FixtureDir("tiny-qwen2"));
  ASSERT_EQ(texts.size(), 2u);
  EXPECT_NE(texts[0], texts[1]);
  texts = ChoicesWithoutSamplingFields(
      TinyQwen2With("greedy-qwen2", R"({"eos_token_id": [997], "temperature": 0})"));
  ASSERT_EQ(texts.size(), 2u);
  EXPECT_EQ(texts[0], texts[1]);
  // top_k 1 keeps only the most likely token: greedy, even at temperature 1.
  texts = ChoicesWithoutSamplingFields(
      TinyQwen2With("top1-qwen2", R"({"do_sample": true, "temperature": 1.0, "top_k": 1})"));
  ASSERT_EQ(texts.size(), 2u);
  EXPECT_EQ(texts[0], texts[1]);

  texts = ChoicesWithoutSamplingFields(RandomLlamaGguf("sampled.gguf", std::nullopt));
  ASSERT_EQ(texts.size(), 2u);
  EXPECT_NE(texts[0], texts[1]);
  texts = ChoicesWithoutSamplingFields(RandomLlamaGguf("greedy.gguf", 0.f));
  ASSERT_EQ(texts.size(), 2u);
  EXPECT_EQ(texts[0], texts[1]);
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

// Issue 27 item 3: the HTTP API samples at temperature 1 unless told, or as
// the model recommends; what the request gives always wins.
TEST(OpenAiRequestTest, SamplingDefaultsFillOnlyWhatTheRequestLeftOut) {
  v1::SamplingParams none;
  ApplyHttpSamplingDefaults(SamplingDefaults{}, none);
  EXPECT_TRUE(none.has_temperature());
  EXPECT_EQ(none.temperature(), 1.f);
  EXPECT_FALSE(none.has_top_p() || none.has_top_k() || none.has_min_p() ||
               none.has_repetition_penalty());

  SamplingDefaults model;
  model.temperature = 0.6f;
  model.top_p = 0.9f;
  model.top_k = 20;
  model.min_p = 0.05f;
  model.repetition_penalty = 1.1f;
  v1::SamplingParams empty;
  ApplyHttpSamplingDefaults(model, empty);
  EXPECT_FLOAT_EQ(empty.temperature(), 0.6f);
  EXPECT_FLOAT_EQ(empty.top_p(), 0.9f);
  EXPECT_EQ(empty.top_k(), 20);
  EXPECT_FLOAT_EQ(empty.min_p(), 0.05f);
  EXPECT_FLOAT_EQ(empty.repetition_penalty(), 1.1f);

  auto r = ParseOpenAiRequest(Endpoint::kCompletions,
                              R"({"prompt": "hi", "temperature": 0, "top_k": -1})");
  ASSERT_TRUE(r.ok()) << r.status();
  ApplyHttpSamplingDefaults(model, *r->generate.mutable_sampling());
  EXPECT_EQ(r->generate.sampling().temperature(), 0.f);
  EXPECT_EQ(r->generate.sampling().top_k(), 0);
  EXPECT_FLOAT_EQ(r->generate.sampling().top_p(), 0.9f);
}

TEST(OpenAiRequestTest, UnsupportedParametersCarryTheirCode) {
  auto r = ParseOpenAiRequest(Endpoint::kCompletions, R"({"prompt": "hi", "suffix": "x"})");
  ASSERT_FALSE(r.ok());
  const HttpError e = ToHttpError(r.status());
  EXPECT_EQ(e.http_status, 400);
  EXPECT_EQ(e.param, "suffix");
  EXPECT_EQ(e.code_name, "unsupported_parameter");
  // Other errors carry none.
  EXPECT_EQ(ToHttpError(ParseOpenAiRequest(Endpoint::kCompletions, "{}").status()).code_name, "");
  // Chat's roles are OpenAI's; the error names the message.
  auto chat = ParseOpenAiRequest(
      Endpoint::kChat, R"({"messages": [{"role": "user", "content": "a"},
                                        {"role": "user", "content": "b"},
                                        {"role": "narrator", "content": "c"}]})");
  EXPECT_THAT(chat.status().message(), HasSubstr("messages[2].role must be one of"));
  EXPECT_THAT(chat.status().message(), HasSubstr("got \"narrator\""));
  auto developer = ParseOpenAiRequest(
      Endpoint::kChat, R"({"messages": [{"role": "developer", "content": "a"}]})");
  ASSERT_TRUE(developer.ok()) << developer.status();
  EXPECT_EQ(developer->chat.messages(0).role(), "system");
}

TEST(ResponseIdTest, PrefixAnd29RandomAlphanumerics) {
  std::set<std::string> ids;
  for (int i = 0; i < 1000; ++i) {
    const std::string id = NewResponseId("cmpl-");
    ASSERT_EQ(id.size(), 5u + kResponseIdRandomChars);
    EXPECT_EQ(id.substr(0, 5), "cmpl-");
    for (char c : id.substr(5)) EXPECT_TRUE(absl::ascii_isalnum(c)) << id;
    ids.insert(id);
  }
  EXPECT_EQ(ids.size(), 1000u);
}

// RFC 9112 sections 3.2, 6.1 and 6.3 (request_framing.h).
TEST(RequestFramingTest, TransferEncodingAndHostRules) {
  namespace bhttp = boost::beast::http;
  struct Case {
    const char* label;
    unsigned version;
    std::vector<std::pair<bhttp::field, const char*>> fields;
    int status;  // 0: fine
    const char* message;
  };
  const Case cases[] = {
      {"plain", 11, {{bhttp::field::host, "x"}, {bhttp::field::content_length, "3"}}, 0, ""},
      {"chunked", 11, {{bhttp::field::host, "x"}, {bhttp::field::transfer_encoding, "Chunked"}},
       0, ""},
      {"no host", 11, {}, 400, "must have a Host header"},
      {"http/1.0 without host", 10, {}, 0, ""},
      {"two hosts", 10, {{bhttp::field::host, "a"}, {bhttp::field::host, "b"}}, 400,
       "2 Host headers"},
      {"gzip", 11, {{bhttp::field::host, "x"}, {bhttp::field::transfer_encoding, "gzip"}}, 400,
       "chunked must be the last"},
      {"chunked, gzip", 11,
       {{bhttp::field::host, "x"}, {bhttp::field::transfer_encoding, "chunked, gzip"}}, 400,
       "chunked must be the last"},
      {"gzip, chunked", 11,
       {{bhttp::field::host, "x"}, {bhttp::field::transfer_encoding, "gzip, chunked"}}, 501,
       "only chunked is implemented"},
      {"deflate then chunked fields", 11,
       {{bhttp::field::host, "x"},
        {bhttp::field::transfer_encoding, "deflate"},
        {bhttp::field::transfer_encoding, " chunked "}},
       501, "\"deflate, chunked\""},
      {"chunked twice", 11,
       {{bhttp::field::host, "x"}, {bhttp::field::transfer_encoding, "chunked,chunked"}}, 400,
       "only once"},
      {"te and cl", 11,
       {{bhttp::field::host, "x"},
        {bhttp::field::transfer_encoding, "chunked"},
        {bhttp::field::content_length, "3"}},
       400, "both Transfer-Encoding and Content-Length"},
      {"te in http/1.0", 10, {{bhttp::field::transfer_encoding, "chunked"}}, 400, "HTTP/1.0"},
  };
  for (const Case& c : cases) {
    bhttp::request_header<> header;
    header.version(c.version);
    for (const auto& [name, value] : c.fields) header.insert(name, value);
    const std::optional<FramingError> error = CheckRequestFraming(header);
    if (c.status == 0) {
      EXPECT_FALSE(error) << c.label << ": " << error->message;
      continue;
    }
    ASSERT_TRUE(error) << c.label;
    EXPECT_EQ(error->status, c.status) << c.label;
    EXPECT_THAT(error->message, HasSubstr(c.message)) << c.label;
  }
}

TEST(CorsPolicyTest, OriginsAndHeaders) {
  const CorsPolicy off;
  EXPECT_FALSE(off.enabled());
  EXPECT_TRUE(off.ResponseHeaders("https://a.example").empty());

  auto list = CorsPolicy::Parse(" https://a.example , http://localhost:3000,");
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_THAT(list->ResponseHeaders("https://a.example"),
              ::testing::ElementsAre(std::pair<std::string, std::string>{"Vary", "Origin"},
                                     std::pair<std::string, std::string>{
                                         "Access-Control-Allow-Origin", "https://a.example"}));
  EXPECT_EQ(list->ResponseHeaders("https://b.example").size(), 1u);  // Vary only
  EXPECT_EQ(list->ResponseHeaders("").size(), 1u);
  const HeaderList preflight = list->PreflightHeaders("http://localhost:3000", "X-Stainless-OS");
  EXPECT_THAT(preflight, ::testing::Contains(std::pair<std::string, std::string>{
                             "Access-Control-Allow-Headers",
                             "authorization, content-type, x-stainless-os"}));
  // A header list that is not one is not echoed.
  EXPECT_THAT(list->PreflightHeaders("http://localhost:3000", "a\r\nb: c"),
              ::testing::Contains(std::pair<std::string, std::string>{
                  "Access-Control-Allow-Headers", "authorization, content-type"}));
  EXPECT_EQ(list->PreflightHeaders("https://b.example", "").size(), 1u);

  auto any = CorsPolicy::Parse("*");
  ASSERT_TRUE(any.ok());
  EXPECT_THAT(any->ResponseHeaders("https://b.example"),
              ::testing::ElementsAre(std::pair<std::string, std::string>{
                  "Access-Control-Allow-Origin", "*"}));
  EXPECT_TRUE(any->ResponseHeaders("").empty());

  for (const char* bad : {"a.example", "https://", "https://a.example/", "https://*.example",
                          "null", "*, https://a.example"}) {
    EXPECT_THAT(CorsPolicy::Parse(bad).status().message(), HasSubstr("--http_cors_origins"))
        << bad;
  }
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
