#include "server/auth_flags.h"

#include <sys/stat.h>

#include "absl/flags/flag.h"
#include "base/logging.h"
#include "server/auth/token_file.h"

ABSL_FLAG(std::string, auth_token_file, "",
          "File of bearer tokens, one per line (# comments): every kvserve.v1 gRPC call and "
          "HTTP /v1/* request must send 'authorization: Bearer <token>' with one of them. "
          "Health stays open. Empty: no authentication. Send tokens over TLS only.");
ABSL_FLAG(std::string, tls_client_ca, "",
          "PEM CA certificates: with --tls_cert, gRPC clients must present a certificate "
          "signed by one of them (mutual TLS).");

namespace kvserve {

absl::StatusOr<std::shared_ptr<const BearerTokens>> BearerTokensFromFlags() {
  const std::string path = absl::GetFlag(FLAGS_auth_token_file);
  if (path.empty()) return nullptr;
  absl::StatusOr<std::vector<std::string>> tokens = ReadTokenFile(path);
  if (!tokens.ok()) return tokens.status();
  // Kubernetes mounts secrets 0644 by default: warn rather than refuse.
  struct stat info;
  if (stat(path.c_str(), &info) == 0 && (info.st_mode & S_IROTH)) {
    KV_LOG(WARNING) << "--auth_token_file " << path
                    << " is readable by every user of this machine (chmod 600 it)";
  }
  KV_LOG(INFO) << "authentication: " << tokens->size() << " bearer token"
               << (tokens->size() == 1 ? "" : "s") << " from " << path;
  return std::make_shared<const BearerTokens>(*tokens);
}

}  // namespace kvserve
