#include "server/server.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "server/library_logs.h"
#include "server/parse_error_interceptor.h"

namespace kvserve {
namespace {

absl::StatusOr<std::string> ReadPem(const std::string& path, const char* flag) {
  std::ifstream in(path);
  if (!in) return absl::InvalidArgumentError(absl::StrCat("--", flag, ": cannot read ", path));
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> Credentials(const ServerOptions& o) {
  if (o.tls_cert_file.empty() && o.tls_key_file.empty()) {
    if (!o.tls_client_ca_file.empty()) {
      return absl::InvalidArgumentError("--tls_client_ca needs TLS: give --tls_cert and --tls_key");
    }
    return grpc::InsecureServerCredentials();
  }
  if (o.tls_cert_file.empty() || o.tls_key_file.empty()) {
    return absl::InvalidArgumentError("--tls_cert and --tls_key must be given together");
  }
  grpc::SslServerCredentialsOptions ssl;
  grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
  absl::StatusOr<std::string> cert = ReadPem(o.tls_cert_file, "tls_cert");
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key = ReadPem(o.tls_key_file, "tls_key");
  if (!key.ok()) return key.status();
  pair.cert_chain = *cert;
  pair.private_key = *key;
  ssl.pem_key_cert_pairs.push_back(pair);
  if (!o.tls_client_ca_file.empty()) {
    absl::StatusOr<std::string> ca = ReadPem(o.tls_client_ca_file, "tls_client_ca");
    if (!ca.ok()) return ca.status();
    ssl.pem_root_certs = *ca;
    ssl.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return grpc::SslServerCredentials(ssl);
}

}  // namespace

KvServer::KvServer(Engine& engine, prometheus::Registry& registry, ChatAccess chat,
                   bool log_prompts)
    : metrics_registry_(registry),
      service_(engine, metrics_registry_, std::move(chat), log_prompts) {}

absl::StatusOr<std::unique_ptr<KvServer>> KvServer::Start(const ServerOptions& options,
                                                          Engine& engine,
                                                          prometheus::Registry& registry) {
  if (options.port < 0 || options.port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("--port must be in [0, 65535], got ", options.port));
  }
  if (absl::Status s = options.grpc_limits.Validate(); !s.ok()) return s;
  std::unique_ptr<KvServer> server(new KvServer(engine, registry, options.chat, options.log_prompts));
  server->metrics().ReportKernelFallbacks(engine.info().kernel_fallbacks);
  server->options_ = options;
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> creds = Credentials(options);
  if (!creds.ok()) return creds.status();

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  const std::string address = absl::StrCat(options.host, ":", options.port);
  builder.AddListeningPort(address, *creds, &server->port_);
  if (options.auth) {
    server->auth_service_ = std::make_unique<AuthenticatingService>(
        server->service_, options.auth, [metrics = &server->metrics_registry_](AuthResult r) {
          metrics->RecordAuthFailure(r, Api::kGrpc);
        });
    builder.RegisterService(server->auth_service_.get());
  } else {
    builder.RegisterService(&server->service_);
  }
  ApplyGrpcLimits(options.grpc_limits, builder);
  // gRPC sets SO_REUSEPORT by default: a second kvserve on a busy port would
  // then start and take half the connections. Refuse the port instead.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  InstallLibraryLogHandlers();
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> interceptors;
  interceptors.push_back(MakeParseErrorInterceptorFactory());
  builder.experimental().SetInterceptorCreators(std::move(interceptors));
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || server->port_ == 0) {
    return absl::UnavailableError(
        absl::StrCat("--port: cannot listen on ", address, " (is the port already in use?)"));
  }
  grpc::HealthCheckServiceInterface* health = server->server_->GetHealthCheckService();
  health->SetServingStatus(true);
  health->SetServingStatus("kvserve.v1.Inference", true);

  if (options.grpc_limits.malloc_trim_interval_s > 0) {
    server->trimmer_ = std::make_unique<MemoryTrimmer>(
        absl::Seconds(options.grpc_limits.malloc_trim_interval_s));
  }
  if (options.metrics_port >= 0) {
    MetricsHttpOptions metrics_options;
    metrics_options.host = options.metrics_host;
    metrics_options.port = options.metrics_port;
    auto metrics = MetricsHttpServer::Start(metrics_options, registry);
    if (!metrics.ok()) {
      server->Shutdown();
      return metrics.status();
    }
    server->metrics_ = *std::move(metrics);
  }
  return server;
}

void KvServer::BeginDrain() {
  if (shut_down_ || !server_) return;
  server_->GetHealthCheckService()->SetServingStatus(false);
  service_.in_flight().BeginDrain();
}

bool KvServer::WaitForNoCalls(absl::Time deadline) { return service_.in_flight().Drain(deadline); }

void KvServer::Shutdown() { Shutdown(absl::Now() + options_.shutdown_grace); }

void KvServer::Shutdown(absl::Time deadline) {
  if (shut_down_) return;
  shut_down_ = true;
  if (server_) {
    server_->GetHealthCheckService()->SetServingStatus(false);
    // gRPC's Shutdown(deadline) also waits for open connections, idle ones
    // included, until the deadline. So drain our own calls first (new ones
    // are refused with UNAVAILABLE), then let gRPC cancel what is left and
    // close every connection at once.
    service_.in_flight().Drain(deadline);
    server_->Shutdown(std::chrono::system_clock::now());
    server_->Wait();
  }
  metrics_.reset();
  trimmer_.reset();
}

KvServer::~KvServer() { Shutdown(); }

}  // namespace kvserve
