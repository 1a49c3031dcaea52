// What SIGTERM does once the servers run: both APIs stop taking generations
// at once (gRPC health NOT_SERVING, HTTP /health 503) and share the drain
// grace. When it runs out, the engine ends every generation still in flight
// with UNAVAILABLE "server shutting down: the drain grace of N s ran out",
// which gRPC sends as the call's status and the HTTP API as an SSE error
// event and `data: [DONE]` (a 503 for a non-streaming call); the clients get
// up to kDrainFlushTime to receive those ends before every connection closes.
#pragma once

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "engine/core/engine.h"
#include "server/http/http_server.h"
#include "server/server.h"

namespace kvserve {

/// How long the ends sent after the grace may take to reach their clients.
inline constexpr absl::Duration kDrainFlushTime = absl::Seconds(5);

/// The status a generation cut by shutdown ends with.
absl::Status DrainGraceRanOut(absl::Duration grace);

/// Drains both servers within `grace` (`http` may be null), ends what is
/// left (see above), shuts both down and stops the engine.
void DrainAndStop(KvServer& grpc, http::HttpServer* http, Engine& engine, absl::Duration grace);

}  // namespace kvserve
