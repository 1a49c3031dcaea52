// Issue 13 item 5 through real transports on loopback: a client that stops
// reading its stream no longer keeps the server generating. The request is
// paused (--max_unsent_tokens), keeps its KV blocks, and completes with the
// same tokens once the client reads again; left unread past --max_stall_s it
// ends (gRPC: RESOURCE_EXHAUSTED naming the flag; HTTP: the connection is
// closed) and its blocks are freed. gRPC through a C++ client that stops
// calling Read, HTTP through a raw socket with a small receive buffer that
// reads nothing. In-process, so ThreadSanitizer sees every thread meet.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kvserve/v1/inference.grpc.pb.h"
#include "nlohmann/json.hpp"
#include "server/http/http_server.h"
#include "tests/server_test_util.h"

namespace kvserve::testing {
namespace {

using ::testing::HasSubstr;

constexpr int kMaxUnsent = 16;
constexpr uint32_t kLongGeneration = 800;  // about twice what gets generated before the pause

// Waits on a condition with a generous deadline (CI is a loaded 2-core machine).
bool WaitFor(const std::function<bool()>& condition) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return condition();
}

std::unique_ptr<TestServer> StartServer(double max_stall_s) {
  EngineConfig config;
  config.max_unsent_tokens = kMaxUnsent;
  config.max_stall_s = max_stall_s;
  return StartTestServer("", config);
}

// A channel whose stream window stays at its initial size (no BDP probing),
// so that what the transport buffers for an unread stream is bounded.
std::unique_ptr<v1::Inference::Stub> SmallWindowStub(const TestServer& t) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  args.SetInt(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 4096);
  return v1::Inference::NewStub(
      grpc::CreateCustomChannel(t.target(), grpc::InsecureChannelCredentials(), args));
}

struct StreamRead {
  std::vector<int32_t> tokens;
  grpc::Status status;
};

// Reads what is left of a stream, then its status.
StreamRead ReadToEnd(grpc::ClientReader<v1::GenerateResponse>& reader, StreamRead read = {}) {
  v1::GenerateResponse msg;
  while (reader.Read(&msg)) {
    read.tokens.insert(read.tokens.end(), msg.token_ids().begin(), msg.token_ids().end());
  }
  read.status = reader.Finish();
  return read;
}

TEST(BackpressureServerTest, GrpcStreamNotReadIsPausedAndCompletesOnceRead) {
  auto t = StartServer(/*max_stall_s=*/0);
  ASSERT_NE(t, nullptr);
  auto stub = SmallWindowStub(*t);
  const v1::GenerateRequest request = TokenRequest({5, 6, 7}, kLongGeneration);
  StreamRead unpaused;
  {
    grpc::ClientContext context;
    auto reader = stub->GenerateStream(&context, request);
    unpaused = ReadToEnd(*reader);
  }
  ASSERT_TRUE(unpaused.status.ok()) << unpaused.status.error_message();
  ASSERT_EQ(unpaused.tokens.size(), kLongGeneration);
  const double generated_before = t->Metric("kvserve_generation_tokens_total");

  grpc::ClientContext context;
  auto reader = stub->GenerateStream(&context, request);
  StreamRead read;
  v1::GenerateResponse first;
  ASSERT_TRUE(reader->Read(&first));  // generating; from now on the client reads nothing
  read.tokens.assign(first.token_ids().begin(), first.token_ids().end());
  ASSERT_TRUE(WaitFor([&] { return t->Metric("kvserve_requests_paused") == 1; }));
  // Every token generated before the pause was published is counted now (the
  // metrics of an iteration follow its outputs), and none comes while paused.
  const double generated = t->Metric("kvserve_generation_tokens_total") - generated_before;
  std::cout << "tokens generated for the unread gRPC stream before it paused: " << generated
            << " (--max_unsent_tokens " << kMaxUnsent << " + what the transport holds)\n";
  EXPECT_LT(generated, kLongGeneration);
  EXPECT_GT(t->Metric("kvserve_kv_blocks_used"), 0);  // its KV is kept

  // Another stream runs to its end: the paused one is not scheduled meanwhile.
  auto other = t->client->Generate(TokenRequest({9, 8}, 20));
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_EQ(t->Metric("kvserve_generation_tokens_total") - generated_before, generated + 20);
  EXPECT_EQ(t->Metric("kvserve_requests_paused"), 1);

  read = ReadToEnd(*reader, std::move(read));
  EXPECT_TRUE(read.status.ok()) << read.status.error_message();
  EXPECT_EQ(read.tokens, unpaused.tokens);  // greedy: the pause changes nothing
  EXPECT_TRUE(WaitFor([&] { return t->Metric("kvserve_requests_paused") == 0; }));
  EXPECT_TRUE(WaitFor([&] { return t->Metric("kvserve_kv_blocks_used") == 0; }));
}

TEST(BackpressureServerTest, GrpcStreamStalledPastMaxStallEndsAndFreesItsBlocks) {
  auto t = StartServer(/*max_stall_s=*/2);
  ASSERT_NE(t, nullptr);
  auto stub = SmallWindowStub(*t);
  grpc::ClientContext context;
  auto reader = stub->GenerateStream(&context, TokenRequest({5, 6, 7}, kLongGeneration));
  v1::GenerateResponse first;
  ASSERT_TRUE(reader->Read(&first));
  ASSERT_TRUE(WaitFor([&] { return t->Metric("kvserve_stream_stall_cancels_total") == 1; }));
  EXPECT_TRUE(WaitFor([&] { return t->Metric("kvserve_kv_blocks_used") == 0; }));
  EXPECT_TRUE(WaitFor([&] { return t->Metric("kvserve_requests_paused") == 0; }));
  // Reading again, the client gets what was buffered, then the status.
  const StreamRead read = ReadToEnd(*reader);
  EXPECT_EQ(read.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(read.status.error_message(), HasSubstr("--max_stall_s"));
  EXPECT_LT(read.tokens.size() + first.token_ids_size(), kLongGeneration);
}

// The OpenAI-compatible HTTP server beside the gRPC one, and a raw client.
class HttpBackpressure {
 public:
  explicit HttpBackpressure(TestServer& t) {
    http::HttpServerOptions options;
    options.host = "127.0.0.1";
    options.port = 0;
    options.served_model_name = "m";
    auto http = http::HttpServer::Start(options, *t.engine, t.server->metrics());
    EXPECT_TRUE(http.ok()) << http.status();
    if (http.ok()) http_ = *std::move(http);
  }
  ~HttpBackpressure() {
    if (http_) http_->Shutdown(absl::Now());
  }
  bool ok() const { return http_ != nullptr; }

  /// Sends a streamed completion on a socket with a small receive buffer and
  /// returns the socket, nothing read.
  int StartStream(uint32_t max_tokens) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    const int rcvbuf = 4096;
    // Before connect: it sets the TCP window the client announces.
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(http_->port()));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    // Greedy (the HTTP API samples at temperature 1 unless told): runs compare texts.
    const std::string body = nlohmann::json{{"prompt", {5, 6, 7}}, {"max_tokens", max_tokens},
                                            {"ignore_eos", true}, {"stream", true},
                                            {"temperature", 0}}
                                 .dump();
    const std::string request =
        absl::StrCat("POST /v1/completions HTTP/1.1\r\nHost: x\r\n",
                     "Content-Type: application/json\r\nContent-Length: ", body.size(),
                     "\r\nConnection: close\r\n\r\n", body);
    EXPECT_EQ(write(fd, request.data(), request.size()), static_cast<ssize_t>(request.size()));
    return fd;
  }

 private:
  std::unique_ptr<http::HttpServer> http_;
};

// Everything the server sends until it closes (the request asked for
// Connection: close), chunked encoding undone: the SSE events.
std::string ReadSseToEnd(int fd) {
  std::string raw;
  char buf[65536];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) raw.append(buf, n);
  close(fd);
  const size_t body = raw.find("\r\n\r\n");
  if (body == std::string::npos) return "";
  std::string events;
  for (size_t pos = body + 4; pos < raw.size();) {
    const size_t line_end = raw.find("\r\n", pos);
    if (line_end == std::string::npos) break;
    size_t size = 0;
    if (!absl::SimpleHexAtoi(raw.substr(pos, line_end - pos), &size) || size == 0) break;
    events += raw.substr(line_end + 2, size);
    pos = line_end + 2 + size + 2;
  }
  return events;
}

// The completion text of an SSE stream's events.
std::string Text(const std::string& events) {
  std::string text;
  for (size_t pos = 0; (pos = events.find("data: {", pos)) != std::string::npos;) {
    const size_t end = events.find("\n\n", pos);
    const auto chunk = nlohmann::json::parse(events.substr(pos + 6, end - pos - 6));
    for (const auto& choice : chunk["choices"]) text += choice["text"].get<std::string>();
    pos = end;
  }
  return text;
}

TEST(BackpressureServerTest, HttpStreamNotReadIsPausedAndCompletesOnceRead) {
  auto t = StartServer(/*max_stall_s=*/0);
  ASSERT_NE(t, nullptr);
  HttpBackpressure http(*t);
  ASSERT_TRUE(http.ok());
  const std::string unpaused = ReadSseToEnd(http.StartStream(kLongGeneration));
  EXPECT_THAT(unpaused, HasSubstr("data: [DONE]"));
  const double generated_before = t->Metric("kvserve_generation_tokens_total");

  const int fd = http.StartStream(kLongGeneration);
  ASSERT_TRUE(WaitFor([&] { return t->Metric("kvserve_requests_paused") == 1; }));
  const double generated = t->Metric("kvserve_generation_tokens_total") - generated_before;
  std::cout << "tokens generated for the unread SSE stream before it paused: " << generated
            << " (--max_unsent_tokens " << kMaxUnsent << " + what the sockets hold)\n";
  EXPECT_LT(generated, kLongGeneration);
  EXPECT_GT(t->Metric("kvserve_kv_blocks_used"), 0);
  auto other = t->client->Generate(TokenRequest({9, 8}, 20));
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_EQ(t->Metric("kvserve_generation_tokens_total") - generated_before, generated + 20);

  const std::string events = ReadSseToEnd(fd);
  EXPECT_THAT(events, HasSubstr("data: [DONE]"));
  EXPECT_FALSE(Text(unpaused).empty());
  EXPECT_EQ(Text(events), Text(unpaused));  // greedy: the same text
  EXPECT_TRUE(WaitFor([&] { return t->Metric("kvserve_requests_paused") == 0; }));
  EXPECT_TRUE(WaitFor([&] { return t->Metric("kvserve_kv_blocks_used") == 0; }));
}

TEST(BackpressureServerTest, HttpStreamStalledPastMaxStallIsClosedAndFreesItsBlocks) {
  auto t = StartServer(/*max_stall_s=*/2);
  ASSERT_NE(t, nullptr);
  HttpBackpressure http(*t);
  ASSERT_TRUE(http.ok());
  const int fd = http.StartStream(kLongGeneration);
  ASSERT_TRUE(WaitFor([&] { return t->Metric("kvserve_stream_stall_cancels_total") == 1; }));
  EXPECT_TRUE(WaitFor([&] { return t->Metric("kvserve_kv_blocks_used") == 0; }));
  // The connection was closed: reading gives what was buffered, then the
  // end, without the stream's [DONE].
  const std::string events = ReadSseToEnd(fd);
  EXPECT_THAT(events, ::testing::Not(HasSubstr("data: [DONE]")));
}

}  // namespace
}  // namespace kvserve::testing
