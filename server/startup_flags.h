// What kvserve checks of its command line before it loads the model: which
// model to serve, and that the ports it will listen on are free.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace kvserve {

/// The model to serve: the one positional argument (`kvserve MODEL`, as
/// `vllm serve MODEL` and llama.cpp take it) or --model; empty for the
/// built-in model. `positional` is what ParseCommandLine returns (argv[0]
/// first). InvalidArgument for a model given both ways or a stray argument.
absl::StatusOr<std::string> ModelFromCommandLine(const std::vector<char*>& positional);

/// CheckPortsFree on --port, --http_port and --metrics_port, with their hosts.
absl::Status CheckListeningPortsFree();

}  // namespace kvserve
