// Authentication over real gRPC on loopback: with bearer tokens configured,
// every kvserve.v1 method answers UNAUTHENTICATED without a token or with a
// wrong one and serves a right one; health stays open; the client library
// sends its token. Mutual TLS: without a certificate signed by
// --tls_client_ca the handshake fails, with one the calls go through.
#include <grpcpp/grpcpp.h>

#include <unistd.h>

#include <filesystem>
#include <functional>

#include "absl/strings/str_cat.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"
#include "tests/server_test_util.h"
#include "tests/test_paths.h"

namespace kvserve::testing {
namespace {

using Stub = v1::Inference::Stub;

struct Method {
  std::string name;
  std::function<grpc::Status(Stub&, grpc::ClientContext*)> call;
  bool ok_when_authorized;  // false: the built-in model has no chat template
};

template <typename Response>
grpc::Status Drain(std::unique_ptr<grpc::ClientReader<Response>> reader) {
  Response response;
  while (reader->Read(&response)) {
  }
  return reader->Finish();
}

v1::ChatRequest Hello() {
  v1::ChatRequest request;
  v1::ChatMessage* m = request.add_messages();
  m->set_role("user");
  m->set_content("hi");
  request.mutable_stopping()->set_max_new_tokens(2);
  return request;
}

// One call of every method of kvserve.v1.Inference.
std::vector<Method> EveryMethod() {
  return {
      {"Generate",
       [](Stub& s, grpc::ClientContext* c) {
         v1::GenerateResponse r;
         return s.Generate(c, TokenRequest({1, 2}, 2), &r);
       },
       true},
      {"GenerateStream",
       [](Stub& s, grpc::ClientContext* c) { return Drain(s.GenerateStream(c, TokenRequest({1, 2}, 2))); },
       true},
      {"GetModelInfo",
       [](Stub& s, grpc::ClientContext* c) {
         v1::GetModelInfoResponse r;
         return s.GetModelInfo(c, v1::GetModelInfoRequest(), &r);
       },
       true},
      {"Tokenize",
       [](Stub& s, grpc::ClientContext* c) {
         v1::TokenizeRequest q;
         q.set_text("hi");
         v1::TokenizeResponse r;
         return s.Tokenize(c, q, &r);
       },
       true},
      {"Detokenize",
       [](Stub& s, grpc::ClientContext* c) {
         v1::DetokenizeRequest q;
         q.add_token_ids(65);
         v1::DetokenizeResponse r;
         return s.Detokenize(c, q, &r);
       },
       true},
      {"ApplyChatTemplate",
       [](Stub& s, grpc::ClientContext* c) {
         v1::ApplyChatTemplateRequest q;
         *q.mutable_messages() = Hello().messages();
         v1::ApplyChatTemplateResponse r;
         return s.ApplyChatTemplate(c, q, &r);
       },
       false},
      {"Chat",
       [](Stub& s, grpc::ClientContext* c) {
         v1::GenerateResponse r;
         return s.Chat(c, Hello(), &r);
       },
       false},
      {"ChatStream", [](Stub& s, grpc::ClientContext* c) { return Drain(s.ChatStream(c, Hello())); },
       false},
  };
}

class AuthGrpcTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions options;
    options.auth = std::make_shared<const BearerTokens>(
        std::vector<std::string>{"token-one", "token-two"});
    server_ = StartTestServer("", {}, options);
    ASSERT_NE(server_, nullptr);
    channel_ = grpc::CreateChannel(server_->target(), grpc::InsecureChannelCredentials());
    stub_ = v1::Inference::NewStub(channel_);
  }
  void TearDown() override {
    if (server_) {
      EXPECT_EQ(server_->Metric("kvserve_kv_blocks_used"), 0);
    }
  }

  // `authorization`: the metadata's value; nullopt: none sent.
  grpc::Status Call(const Method& method, std::optional<std::string> authorization) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    if (authorization) context.AddMetadata("authorization", *authorization);
    return method.call(*stub_, &context);
  }

  std::unique_ptr<TestServer> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<Stub> stub_;
};

TEST_F(AuthGrpcTest, TheTableCoversEveryMethodOfTheService) {
  const google::protobuf::ServiceDescriptor* service =
      google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(
          v1::Inference::service_full_name());
  ASSERT_NE(service, nullptr);
  std::vector<Method> methods = EveryMethod();
  ASSERT_EQ(service->method_count(), static_cast<int>(methods.size()));
  for (const Method& m : methods) EXPECT_NE(service->FindMethodByName(m.name), nullptr) << m.name;
}

TEST_F(AuthGrpcTest, EveryMethodRefusesAMissingOrWrongToken) {
  for (const Method& m : EveryMethod()) {
    SCOPED_TRACE(m.name);
    grpc::Status missing = Call(m, std::nullopt);
    EXPECT_EQ(missing.error_code(), grpc::StatusCode::UNAUTHENTICATED);
    EXPECT_NE(missing.error_message().find("authorization: Bearer <token>"), std::string::npos)
        << missing.error_message();
    grpc::Status wrong = Call(m, "Bearer token-three");
    EXPECT_EQ(wrong.error_code(), grpc::StatusCode::UNAUTHENTICATED);
    EXPECT_EQ(wrong.error_message(), "incorrect bearer token");
    EXPECT_EQ(Call(m, "Basic dG9rZW4tb25l").error_code(), grpc::StatusCode::UNAUTHENTICATED);
    EXPECT_EQ(Call(m, "Bearer token-one-and-more").error_code(),
              grpc::StatusCode::UNAUTHENTICATED);
    // Two values, even if one is right: which one a proxy forwards is unclear.
    grpc::ClientContext twice;
    twice.AddMetadata("authorization", "Bearer token-one");
    twice.AddMetadata("authorization", "Bearer token-three");
    EXPECT_EQ(m.call(*stub_, &twice).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  }
  // Each refusal counted once, by reason: per method one missing, two
  // rejected (a wrong token, a longer one) and two malformed ("Basic", two values).
  const double methods = static_cast<double>(EveryMethod().size());
  EXPECT_EQ(server_->Metric(R"(kvserve_auth_failures_total{api="grpc",reason="missing"})"), methods);
  EXPECT_EQ(server_->Metric(R"(kvserve_auth_failures_total{api="grpc",reason="rejected"})"),
            2 * methods);
  EXPECT_EQ(server_->Metric(R"(kvserve_auth_failures_total{api="grpc",reason="malformed"})"),
            2 * methods);
}

TEST_F(AuthGrpcTest, EveryMethodServesARightToken) {
  for (const Method& m : EveryMethod()) {
    SCOPED_TRACE(m.name);
    for (const char* token : {"Bearer token-one", "bearer token-two"}) {
      grpc::Status status = Call(m, token);
      if (m.ok_when_authorized) {
        EXPECT_TRUE(status.ok()) << status.error_message();
      } else {  // reached the service, which has no chat template to render with
        EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION)
            << status.error_message();
      }
    }
  }
  for (const char* reason : {"missing", "rejected", "malformed"}) {
    EXPECT_EQ(server_->Metric(absl::StrCat(R"(kvserve_auth_failures_total{api="grpc",reason=")",
                                           reason, R"("})")),
              0)
        << reason;
  }
}

TEST_F(AuthGrpcTest, HealthStaysOpen) {
  auto health = grpc::health::v1::Health::NewStub(channel_);
  for (const char* service : {"", "kvserve.v1.Inference"}) {
    grpc::ClientContext context;
    grpc::health::v1::HealthCheckRequest request;
    request.set_service(service);
    grpc::health::v1::HealthCheckResponse response;
    grpc::Status status = health->Check(&context, request, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(response.status(), grpc::health::v1::HealthCheckResponse::SERVING);
  }
}

TEST_F(AuthGrpcTest, TheClientLibrarySendsItsToken) {
  ClientOptions options;
  options.targets = {server_->target()};
  options.auth_token = "token-two";
  auto client = Client::Connect(options);
  ASSERT_TRUE(client.ok()) << client.status();
  ASSERT_TRUE((*client)->WaitUntilServing(absl::Seconds(60)).ok());
  auto unary = (*client)->Generate(TokenRequest({1, 2, 3}, 3));
  ASSERT_TRUE(unary.ok()) << unary.status();
  EXPECT_EQ(unary->token_ids_size(), 3);
  StreamResult stream = (*client)->GenerateStream(TokenRequest({1, 2, 3}, 3));
  ASSERT_TRUE(stream.status.ok()) << stream.status.error_message();
  EXPECT_EQ(std::vector<int32_t>(stream.response.token_ids().begin(), stream.response.token_ids().end()),
            std::vector<int32_t>(unary->token_ids().begin(), unary->token_ids().end()));
  EXPECT_TRUE((*client)->GetModelInfo().ok());
  // The test server's own client sends none.
  EXPECT_EQ(server_->client->GetModelInfo().status().code(), absl::StatusCode::kUnauthenticated);
  options.auth_token = "two\nlines";
  EXPECT_EQ(Client::Connect(options).status().message(), "auth_token: must be one line");
}

// Certificates made by openssl for the test: a server certificate for
// "localhost", a client CA, a client certificate it signed, and a
// self-signed client certificate it did not.
class MutualTlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // Per process: ctest -j2 runs this suite's tests in two processes at once.
    dir_ = new std::string(::testing::TempDir() + "/kvserve_mtls_" + std::to_string(getpid()));
    std::filesystem::create_directories(*dir_);
    const std::string d = *dir_ + "/";
    const std::string ec = " -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes ";
    const std::string commands =
        "cd " + d + " && " +
        "openssl req -x509" + ec + "-days 1 -subj /CN=localhost -addext subjectAltName=DNS:localhost "
        "-keyout server.key -out server.pem && "
        "openssl req -x509" + ec + "-days 1 -subj /CN=kvserve-test-client-ca -keyout ca.key -out ca.pem && "
        "openssl req" + ec + "-subj /CN=client -keyout client.key -out client.csr && "
        "openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 1 "
        "-out client.pem && "
        "openssl req -x509" + ec + "-days 1 -subj /CN=stranger -keyout stranger.key -out stranger.pem";
    ok_ = std::system(("(" + commands + ") >/dev/null 2>&1").c_str()) == 0;
  }
  static void TearDownTestSuite() {
    std::filesystem::remove_all(*dir_);
    delete dir_;
  }
  static std::string Path(const std::string& name) { return *dir_ + "/" + name; }

  ClientOptions TlsClient(const TestServer& server) const {
    ClientOptions options;
    options.targets = {server.target()};
    options.use_tls = true;
    options.tls_root_certs_file = Path("server.pem");
    options.tls_server_name = "localhost";
    return options;
  }

  static std::string* dir_;
  static bool ok_;
};
std::string* MutualTlsTest::dir_ = nullptr;
bool MutualTlsTest::ok_ = false;

TEST_F(MutualTlsTest, OnlyClientsWithACertificateOfTheCaConnect) {
  ASSERT_TRUE(ok_) << "openssl is needed (deploy/install-deps.sh)";
  ServerOptions options;
  options.tls_cert_file = Path("server.pem");
  options.tls_key_file = Path("server.key");
  options.tls_client_ca_file = Path("ca.pem");
  auto server = StartTestServer("", {}, options);
  ASSERT_NE(server, nullptr);
  CallOptions call;
  call.timeout = absl::Seconds(30);

  ClientOptions with_cert = TlsClient(*server);
  with_cert.tls_client_cert_file = Path("client.pem");
  with_cert.tls_client_key_file = Path("client.key");
  auto client = Client::Connect(with_cert);
  ASSERT_TRUE(client.ok()) << client.status();
  auto response = (*client)->Generate(TokenRequest({1, 2}, 3), call);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->token_ids_size(), 3);

  // No certificate, or one the CA did not sign: the handshake fails.
  auto without = Client::Connect(TlsClient(*server));
  EXPECT_EQ((*without)->Generate(TokenRequest({1}, 1), call).status().code(),
            absl::StatusCode::kUnavailable);
  ClientOptions stranger = TlsClient(*server);
  stranger.tls_client_cert_file = Path("stranger.pem");
  stranger.tls_client_key_file = Path("stranger.key");
  EXPECT_EQ((*Client::Connect(stranger))->Generate(TokenRequest({1}, 1), call).status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(server->Metric("kvserve_kv_blocks_used"), 0);
}

TEST_F(MutualTlsTest, ClientCaNeedsTls) {
  ServerOptions options;
  options.tls_client_ca_file = Path("ca.pem");
  auto registry = std::make_shared<prometheus::Registry>();
  auto source = OpenModelSource("");
  ASSERT_TRUE(source.ok());
  // Refused before anything listens: no engine needed beyond construction.
  auto engine = Engine::Create({}, *std::move(source), std::make_unique<CpuBackend>(), nullptr);
  ASSERT_TRUE(engine.ok()) << engine.status();
  auto server = KvServer::Start(options, **engine, *registry);
  ASSERT_FALSE(server.ok());
  EXPECT_EQ(server.status().message(), "--tls_client_ca needs TLS: give --tls_cert and --tls_key");
  (*engine)->Stop();
}

TEST(ClientOptionsTest, ClientCertificateNeedsItsKeyAndTls) {
  ClientOptions options;
  options.targets = {"127.0.0.1:1"};
  options.tls_client_cert_file = "c.pem";
  EXPECT_EQ(Client::Connect(options).status().message(),
            "tls_client_cert_file and tls_client_key_file must be given together");
  options.tls_client_key_file = "c.key";
  EXPECT_EQ(Client::Connect(options).status().message(), "a TLS client certificate needs use_tls");
}

}  // namespace
}  // namespace kvserve::testing
