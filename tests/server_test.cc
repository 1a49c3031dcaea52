// The server through a real gRPC channel on loopback: streaming and unary
// agree, concurrent requests all finish, every invalid input is refused with
// INVALID_ARGUMENT naming the field, health and model info answer, text in
// and text out work on the default model.
#include <grpcpp/generic/generic_stub.h>

#include <future>
#include <thread>

#include "absl/strings/match.h"
#include "engine/text/utf8.h"
#include "gmock/gmock.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "gtest/gtest.h"
#include "tests/golden_util.h"
#include "tests/server_test_util.h"
#include "tests/test_paths.h"

namespace kvserve::testing {
namespace {

using ::testing::HasSubstr;

class ServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = StartTestServer(FixtureDir("tiny-llama-gqa")).release(); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  Client& client() { return *server_->client; }
  static TestServer* server_;
};
TestServer* ServerTest::server_ = nullptr;

TEST_F(ServerTest, HealthIsServing) {
  auto channel = grpc::CreateChannel(server_->target(), grpc::InsecureChannelCredentials());
  auto health = grpc::health::v1::Health::NewStub(channel);
  for (const std::string service : {"", "kvserve.v1.Inference"}) {
    grpc::ClientContext context;
    grpc::health::v1::HealthCheckRequest request;
    request.set_service(service);
    grpc::health::v1::HealthCheckResponse response;
    ASSERT_TRUE(health->Check(&context, request, &response).ok());
    EXPECT_EQ(response.status(), grpc::health::v1::HealthCheckResponse::SERVING) << service;
  }
}

TEST_F(ServerTest, ModelInfoDescribesTheFixture) {
  auto info = client().GetModelInfo();
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->model_name(), "tiny-llama-gqa");
  EXPECT_EQ(info->vocab_size(), 320u);
  EXPECT_EQ(info->max_context(), 512u);
  EXPECT_THAT(info->eos_token_ids(), ::testing::ElementsAre(2));
  EXPECT_EQ(info->kv_block_size(), 16u);
  EXPECT_GT(info->kv_num_blocks(), 0u);
  EXPECT_FALSE(info->has_tokenizer());
  EXPECT_EQ(info->device(), "cpu");
}

TEST_F(ServerTest, StreamAndUnaryGiveTheGoldenGreedyTokens) {
  for (const GoldenCase& c : LoadGolden(FixtureDir("tiny-llama-gqa") + "/golden.json")) {
    const v1::GenerateRequest request = TokenRequest(c.prompt, 24);
    auto unary = client().Generate(request);
    ASSERT_TRUE(unary.ok()) << unary.status();
    StreamResult stream = client().GenerateStream(request);
    ASSERT_TRUE(stream.status.ok()) << stream.status.error_message();
    EXPECT_THAT(stream.response.token_ids(), ::testing::ElementsAreArray(unary->token_ids()));
    ASSERT_EQ(unary->token_ids_size(), 24);
    for (size_t i = 0; i < ComparableSteps(c); ++i) EXPECT_EQ(unary->token_ids(i), c.greedy[i]);
    EXPECT_EQ(unary->finish_reason(), v1::FINISH_REASON_LENGTH);
    EXPECT_EQ(stream.response.finish_reason(), v1::FINISH_REASON_LENGTH);
    EXPECT_EQ(unary->usage().prompt_tokens(), c.prompt.size());
    EXPECT_EQ(unary->usage().completion_tokens(), 24u);
    EXPECT_EQ(stream.response.usage().completion_tokens(), 24u);
    // Streamed: one message per step (or a few when the client lags); only the
    // last carries the finish reason.
    EXPECT_GE(stream.chunk_times.size(), 2u);
  }
}

TEST_F(ServerTest, ConcurrentRequestsAllFinish) {
  constexpr int kClients = 24;
  std::vector<std::thread> threads;
  std::vector<StreamResult> results(kClients);
  for (int i = 0; i < kClients; ++i) {
    threads.emplace_back([&, i] {
      std::vector<int32_t> prompt;
      for (int j = 0; j <= i % 7; ++j) prompt.push_back(10 + i + j);
      results[i] = client().GenerateStream(TokenRequest(prompt, 8 + i % 5));
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < kClients; ++i) {
    ASSERT_TRUE(results[i].status.ok()) << i << ": " << results[i].status.error_message();
    EXPECT_EQ(results[i].response.token_ids_size(), 8 + i % 5);
  }
}

TEST_F(ServerTest, PrefixCacheCountersOverMetricsHttp) {
  // A 40-token prefix that no other test sends (ids 100..139): the second
  // request finds its 2 full blocks cached.
  std::vector<int32_t> prefix;
  for (int32_t id = 100; id < 140; ++id) prefix.push_back(id);
  const double queries = server_->Metric("kvserve_prefix_cache_queries_total");
  const double hits = server_->Metric("kvserve_prefix_cache_hits_total");
  ASSERT_GE(queries, 0) << server_->ScrapeMetrics();
  ASSERT_GE(hits, 0);
  for (int32_t last : {7, 8}) {
    std::vector<int32_t> prompt = prefix;
    prompt.push_back(last);
    auto response = client().Generate(TokenRequest(prompt, 4));
    ASSERT_TRUE(response.ok()) << response.status();
  }
  EXPECT_EQ(server_->Metric("kvserve_prefix_cache_queries_total") - queries, 2 * 41);
  EXPECT_EQ(server_->Metric("kvserve_prefix_cache_hits_total") - hits, 32);
  EXPECT_EQ(server_->Metric("kvserve_kv_blocks_used"), 0);
}

TEST_F(ServerTest, SameSeedSameTokens) {
  v1::GenerateRequest request = TokenRequest({5, 6, 7}, 16);
  request.mutable_sampling()->set_temperature(1.0f);
  request.mutable_sampling()->set_top_k(50);
  request.mutable_sampling()->set_top_p(0.9f);
  request.mutable_sampling()->set_seed(1234);
  auto a = client().Generate(request);
  auto b = client().Generate(request);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_THAT(a->token_ids(), ::testing::ElementsAreArray(b->token_ids()));
  request.mutable_sampling()->set_seed(99);
  auto c = client().Generate(request);
  ASSERT_TRUE(c.ok());
  EXPECT_THAT(c->token_ids(), ::testing::Not(::testing::ElementsAreArray(a->token_ids())));
}

TEST_F(ServerTest, StopTokenIdEndsTheStream) {
  // Greedy output of the 1-token golden prompt starts 164, 164, ...: stop on 164.
  v1::GenerateRequest request = TokenRequest({168}, 24);
  request.mutable_stopping()->add_stop_token_ids(164);
  auto r = client().Generate(request);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r->token_ids(), ::testing::ElementsAre(164));
  EXPECT_EQ(r->finish_reason(), v1::FINISH_REASON_STOP);
}

TEST_F(ServerTest, LogprobsComeWithEveryStreamedToken) {
  v1::GenerateRequest request = TokenRequest({5, 6, 7}, 12);
  request.mutable_sampling()->set_temperature(0.8f);
  request.mutable_sampling()->set_seed(7);
  request.mutable_sampling()->set_repetition_penalty(1.3f);
  request.mutable_sampling()->set_logprobs(5);
  int messages = 0;
  StreamResult stream = client().GenerateStream(request, [&](const StreamChunk& chunk) {
    ++messages;
    ASSERT_EQ(chunk.response.logprobs_size(), chunk.response.token_ids_size());
    for (int i = 0; i < chunk.response.token_ids_size(); ++i) {
      const v1::TokenLogprobs& l = chunk.response.logprobs(i);
      EXPECT_EQ(l.token_id(), chunk.response.token_ids(i));
      EXPECT_LE(l.logprob(), 0.f);
      ASSERT_EQ(l.top_size(), 5);
      for (int j = 1; j < 5; ++j) EXPECT_GE(l.top(j - 1).logprob(), l.top(j).logprob());
      EXPECT_GE(l.top(0).logprob(), l.logprob());
    }
  });
  ASSERT_TRUE(stream.status.ok()) << stream.status.error_message();
  EXPECT_GT(messages, 0);
  ASSERT_EQ(stream.response.logprobs_size(), 12);
  // The unary reply carries the same (same seed, same tokens, same logprobs).
  auto unary = client().Generate(request);
  ASSERT_TRUE(unary.ok()) << unary.status();
  ASSERT_EQ(unary->logprobs_size(), 12);
  for (int i = 0; i < 12; ++i) {
    EXPECT_EQ(unary->logprobs(i).token_id(), stream.response.logprobs(i).token_id());
    EXPECT_EQ(unary->logprobs(i).logprob(), stream.response.logprobs(i).logprob());
  }
  // Without the field: none.
  request.mutable_sampling()->clear_logprobs();
  auto plain = client().Generate(request);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->logprobs_size(), 0);
  EXPECT_EQ(server_->Metric("kvserve_kv_blocks_used"), 0);
}

struct InvalidCase {
  std::string name;
  std::function<void(v1::GenerateRequest&)> mutate;
  std::string message;  // a part of the error message: the field and its limit
};

TEST_F(ServerTest, InvalidRequestsAreRefusedWithTheFieldAndTheLimit) {
  std::vector<int32_t> long_prompt(512, 7);
  const std::vector<InvalidCase> cases = {
      {"no input", [](auto& r) { r.clear_input(); }, "input"},
      {"empty token list", [](auto& r) { r.mutable_token_ids()->clear_ids(); }, "token_ids.ids must not be empty"},
      {"token id above vocab", [](auto& r) { r.mutable_token_ids()->add_ids(320); }, "[0, 320)"},
      {"negative token id", [](auto& r) { r.mutable_token_ids()->set_ids(0, -1); }, "token_ids.ids[0] = -1"},
      {"negative temperature", [](auto& r) { r.mutable_sampling()->set_temperature(-0.5f); }, "sampling.temperature"},
      {"NaN temperature", [](auto& r) { r.mutable_sampling()->set_temperature(NAN); }, "sampling.temperature"},
      {"top_p zero", [](auto& r) { r.mutable_sampling()->set_top_p(0.f); }, "sampling.top_p must be in (0, 1]"},
      {"top_p above one", [](auto& r) { r.mutable_sampling()->set_top_p(1.5f); }, "sampling.top_p must be in (0, 1]"},
      {"negative top_k", [](auto& r) { r.mutable_sampling()->set_top_k(-1); }, "sampling.top_k must be >= 0"},
      {"max_new_tokens zero", [](auto& r) { r.mutable_stopping()->set_max_new_tokens(0); }, "stopping.max_new_tokens must be >= 1"},
      {"max_new_tokens beyond context", [](auto& r) { r.mutable_stopping()->set_max_new_tokens(513); }, "exceeds the model's context of 512"},
      {"prompt + max_new_tokens beyond context",
       [](auto& r) {
         for (int i = 0; i < 500; ++i) r.mutable_token_ids()->add_ids(3);
         r.mutable_stopping()->set_max_new_tokens(100);
       },
       "exceeds the model's context of 512"},
      {"prompt as long as the context",
       [&](auto& r) {
         r.mutable_token_ids()->clear_ids();
         for (int32_t id : long_prompt) r.mutable_token_ids()->add_ids(id);
         r.mutable_stopping()->clear_max_new_tokens();
       },
       "context is 512 tokens"},
      {"text without a tokenizer", [](auto& r) { r.set_text("hello"); }, "tokenizer"},
      {"stop token id outside vocab", [](auto& r) { r.mutable_stopping()->add_stop_token_ids(999); }, "stopping.stop_token_ids[0]"},
      {"stop string without a tokenizer", [](auto& r) { r.mutable_stopping()->add_stop("x"); }, "stopping.stop"},
      {"repetition_penalty zero", [](auto& r) { r.mutable_sampling()->set_repetition_penalty(0.f); }, "sampling.repetition_penalty must be a finite number > 0"},
      {"presence_penalty above 2", [](auto& r) { r.mutable_sampling()->set_presence_penalty(2.5f); }, "sampling.presence_penalty must be in [-2, 2], got 2.5"},
      {"frequency_penalty below -2", [](auto& r) { r.mutable_sampling()->set_frequency_penalty(-3.f); }, "sampling.frequency_penalty must be in [-2, 2], got -3"},
      {"min_p above one", [](auto& r) { r.mutable_sampling()->set_min_p(1.5f); }, "sampling.min_p must be in [0, 1], got 1.5"},
      {"logprobs 21", [](auto& r) { r.mutable_sampling()->set_logprobs(21); }, "sampling.logprobs must be in [0, 20], got 21"},
      {"request_id of 257 bytes", [](auto& r) { r.set_request_id(std::string(257, 'x')); }, "request_id of 257 bytes exceeds the limit of 256 bytes"},
      {"min_new_tokens above max_new_tokens", [](auto& r) { r.mutable_sampling()->set_min_new_tokens(5); }, "sampling.min_new_tokens (5) must be <= stopping.max_new_tokens (4)"},
  };
  for (const InvalidCase& c : cases) {
    SCOPED_TRACE(c.name);
    v1::GenerateRequest request = TokenRequest({1, 2, 3}, 4);
    c.mutate(request);
    auto unary = client().Generate(request);
    ASSERT_FALSE(unary.ok());
    EXPECT_EQ(unary.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(unary.status().message()), HasSubstr(c.message));
    StreamResult stream = client().GenerateStream(request);
    EXPECT_EQ(stream.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(stream.status.error_message(), HasSubstr(c.message));
    EXPECT_EQ(stream.response.token_ids_size(), 0);
  }
  EXPECT_GE(server_->Metric("kvserve_requests_total{api=\"grpc\",outcome=\"invalid_argument\"}"), 2.0 * cases.size());
  EXPECT_EQ(server_->Metric("kvserve_kv_blocks_used"), 0);
}

// Issue 13 item 6: a body that is not a GenerateRequest (here invalid UTF-8
// in `text`) never reaches our handler; gRPC alone would answer
// UNIMPLEMENTED with no message. In this binary so that TSan sees the
// interceptor's hand-off between gRPC's threads (tests/errors/ has the rest).
TEST_F(ServerTest, UnparseableBodyIsInvalidArgumentNamingTheMessageAndField) {
  auto channel = grpc::CreateChannel(server_->target(), grpc::InsecureChannelCredentials());
  grpc::GenericStub stub(channel);
  const char kTextWithInvalidUtf8[] = {0x12, 0x02, char(0xc3), 0x28};  // field 2, "\xc3("
  grpc::Slice slice(kTextWithInvalidUtf8, sizeof(kTextWithInvalidUtf8));
  grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  std::promise<grpc::Status> done;
  stub.UnaryCall(&context, "/kvserve.v1.Inference/Generate", grpc::StubOptions(), &request,
                 &response, [&](grpc::Status status) { done.set_value(std::move(status)); });
  const grpc::Status status = done.get_future().get();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << status.error_message();
  EXPECT_THAT(status.error_message(), HasSubstr("not a valid kvserve.v1.GenerateRequest"));
  EXPECT_THAT(status.error_message(), HasSubstr("kvserve.v1.GenerateRequest.text"));
}

// Issue 13 item 2: a long client id repeated in every message multiplied the
// reply's size; it now rides the first message only.
TEST_F(ServerTest, StreamCarriesTheRequestIdInItsFirstMessageOnly) {
  v1::GenerateRequest request = TokenRequest({1, 2, 3}, 16);
  const std::string id(256, 'i');  // the longest accepted
  request.set_request_id(id);
  std::vector<std::string> ids;
  StreamResult r = client().GenerateStream(
      request, [&](const StreamChunk& chunk) { ids.push_back(chunk.response.request_id()); });
  ASSERT_TRUE(r.status.ok()) << r.status.error_message();
  ASSERT_GE(ids.size(), 1u);
  EXPECT_EQ(ids[0], id);
  for (size_t i = 1; i < ids.size(); ++i) EXPECT_EQ(ids[i], "") << "message " << i;
  EXPECT_EQ(r.response.request_id(), id);  // the client's merge keeps it
  auto unary = client().Generate(request);
  ASSERT_TRUE(unary.ok()) << unary.status();
  EXPECT_EQ(unary->request_id(), id);
}

TEST_F(ServerTest, DeadlineExceededEndsTheStream) {
  CallOptions options;
  options.timeout = absl::Milliseconds(1);
  StreamResult r = client().GenerateStream(TokenRequest({1, 2, 3}, 400), {}, options);
  EXPECT_EQ(r.status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
}

class DefaultModelServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = StartTestServer("").release(); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  static TestServer* server_;
};
TestServer* DefaultModelServerTest::server_ = nullptr;

TEST_F(DefaultModelServerTest, TextInTextOut) {
  v1::GenerateRequest request;
  request.set_text("Hello, kvserve!");
  request.mutable_stopping()->set_max_new_tokens(32);
  request.mutable_stopping()->set_ignore_eos(true);
  StreamResult r = server_->client->GenerateStream(request);
  ASSERT_TRUE(r.status.ok()) << r.status.error_message();
  EXPECT_EQ(r.response.usage().prompt_tokens(), 16u);  // BOS + 15 bytes
  EXPECT_EQ(r.response.token_ids_size(), 32);
  // The streamed text is exactly the detokenized ids.
  std::vector<int32_t> ids(r.response.token_ids().begin(), r.response.token_ids().end());
  auto text = server_->client->Detokenize(ids);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(r.response.text(), *text);
  auto tokens = server_->client->Tokenize("Hi", true);
  ASSERT_TRUE(tokens.ok());
  EXPECT_THAT(*tokens, ::testing::ElementsAre(1, 'H' + 3, 'i' + 3));
}

TEST_F(DefaultModelServerTest, StopStringCutsTheText) {
  // Find what the model says greedily, then stop on a piece of it.
  v1::GenerateRequest request;
  request.set_text("abc");
  request.mutable_stopping()->set_max_new_tokens(48);
  request.mutable_stopping()->set_ignore_eos(true);
  auto full = server_->client->Generate(request);
  ASSERT_TRUE(full.ok());
  const std::string text = full->text();
  ASSERT_GE(text.size(), 12u);
  // Two whole characters from the 6th byte on (proto3 strings must be UTF-8).
  size_t begin = 5;
  while (begin < text.size() && Utf8SequenceLength(absl::string_view(text).substr(begin)) == 0) ++begin;
  size_t end = begin;
  for (int chars = 0; chars < 2 && end < text.size(); ++chars) {
    end += std::max(1, Utf8SequenceLength(absl::string_view(text).substr(end)));
  }
  const std::string stop = text.substr(begin, end - begin);
  const size_t cut = text.find(stop);
  request.mutable_stopping()->add_stop(stop);
  StreamResult r = server_->client->GenerateStream(request);
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.response.finish_reason(), v1::FINISH_REASON_STOP);
  EXPECT_EQ(r.response.text(), text.substr(0, cut));
}

}  // namespace
}  // namespace kvserve::testing
