#include "server/drain.h"

#include "absl/strings/str_cat.h"
#include "base/logging.h"

namespace kvserve {

absl::Status DrainGraceRanOut(absl::Duration grace) {
  return absl::UnavailableError(absl::StrCat("server shutting down: the drain grace of ",
                                             absl::ToDoubleSeconds(grace),
                                             " s ran out (--shutdown_grace_s)"));
}

void DrainAndStop(KvServer& grpc, http::HttpServer* http, Engine& engine, absl::Duration grace) {
  const absl::Time deadline = absl::Now() + grace;
  // Both refuse new generations before either waits: they share the grace.
  grpc.BeginDrain();
  if (http) http->BeginDrain();
  // The gRPC server stops last, so that its health service answers
  // NOT_SERVING (rather than refusing connections) while any request runs.
  bool drained = http == nullptr || http->WaitForNoCalls(deadline);
  drained = grpc.WaitForNoCalls(deadline) && drained;
  if (!drained) {
    KV_LOG(INFO) << "drain grace of " << absl::ToDoubleSeconds(grace)
                 << " s ran out: ending the requests in flight with UNAVAILABLE";
    engine.AbortAll(DrainGraceRanOut(grace));
    const absl::Time flushed = absl::Now() + kDrainFlushTime;
    if (http) http->WaitForNoCalls(flushed);
    grpc.WaitForNoCalls(flushed);
  }
  if (http) http->Shutdown(absl::Now());
  grpc.Shutdown(absl::Now());
  engine.Stop();
}

}  // namespace kvserve
