#include "client/flag_groups.h"

namespace kvserve {
namespace {

// Both tools connect the same way (client/client.h).
FlagGroup ConnectionGroup() {
  return {"Connection", {"target", "tls", "tls_*", "auth_token_file", "auth_token"}};
}

}  // namespace

// A new flag that no entry names is listed under "Other": add it here.
std::vector<FlagGroup> CliFlagGroups() {
  return {
      ConnectionGroup(),
      {"Input", {"prompt", "prompt_ids", "message", "system"}},
      {"Sampling",
       {"temperature", "top_k", "top_p", "min_p", "seed", "repetition_penalty", "presence_penalty",
        "frequency_penalty", "logprobs"}},
      {"Stopping", {"max_tokens", "min_tokens", "stop", "ignore_eos", "timeout_s"}},
      {"Output", {"json"}},
  };
}

std::vector<FlagGroup> BenchFlagGroups() {
  FlagGroup connection = ConnectionGroup();
  connection.names.push_back("connect_timeout_s");
  return {
      connection,
      {"Load",
       {"concurrency", "rate", "arrival", "max_in_flight", "requests", "duration_s",
        "warmup_requests", "cold_warm"}},
      {"Workload",
       {"prompt_*", "output_*", "prompts_file", "ignore_eos", "temperature", "json_schema", "seed", "timeout_s"}},
      {"Goodput", {"slo_*"}},
      {"Output", {"metrics_url", "json_out", "records_out", "plot_out", "progress"}},
  };
}

}  // namespace kvserve
