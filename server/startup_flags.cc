#include "server/startup_flags.h"

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "server/flags.h"
#include "server/http_flags.h"
#include "server/port_check.h"

namespace kvserve {

absl::StatusOr<std::string> ModelFromCommandLine(const std::vector<char*>& positional) {
  const std::string flag = absl::GetFlag(FLAGS_model);
  if (positional.size() > 2) {
    const std::string first = positional[1];
    return absl::InvalidArgumentError(absl::StrCat(
        "unexpected argument \"", positional[2], "\": kvserve takes one model path",
        first == "serve" ? " directly (kvserve MODEL, not kvserve serve MODEL)"
                         : " (kvserve [MODEL] [--flags]); kvserve --help lists the flags"));
  }
  if (positional.size() < 2) return flag;
  if (!flag.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("the model is given twice: \"", positional[1],
                                                   "\" and --model=", flag, "; give one"));
  }
  return std::string(positional[1]);
}

absl::Status CheckListeningPortsFree() {
  return CheckPortsFree({
      {"port", absl::GetFlag(FLAGS_host), absl::GetFlag(FLAGS_port)},
      {"http_port", absl::GetFlag(FLAGS_http_host), absl::GetFlag(FLAGS_http_port)},
      {"metrics_port", absl::GetFlag(FLAGS_metrics_host), absl::GetFlag(FLAGS_metrics_port)},
  });
}

}  // namespace kvserve
