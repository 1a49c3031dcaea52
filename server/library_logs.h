// gRPC's (gpr_log) and protobuf's log lines, routed through KV_LOG with each
// library log site rate-limited (issue 13 item 6): a client can make these
// libraries log at will (protobuf writes an ERROR line for every request with
// invalid UTF-8 in a string field), and must not be able to flood the log.
#pragma once

#include <string>

namespace kvserve {

/// At most this many lines per library log site per minute; the rest are
/// counted and reported as "suppressed N similar lines" when the site next writes.
inline constexpr int kLibraryLogLinesPerMinute = 5;

/// Installs the handlers for the whole process (idempotent). Call before the
/// gRPC server starts.
void InstallLibraryLogHandlers();

/// Why protobuf last refused to parse a message on this thread (e.g. "String
/// field 'kvserve.v1.GenerateRequest.text' contains invalid UTF-8 data"), and
/// forgets it; empty when protobuf logged no reason.
std::string TakeLastParseErrorOnThisThread();

}  // namespace kvserve
