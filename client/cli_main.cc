// kvserve-cli: talk to a kvserve server from the shell.
//
//   kvserve-cli --target HOST:PORT generate --prompt TEXT | --prompt-ids 1,2,3
//               [--max-tokens N] [--temperature T] [--top-k K] [--top-p P] [--seed S]
//               [--repetition-penalty R] [--presence-penalty P] [--frequency-penalty F]
//               [--min-p P] [--min-tokens N] [--logprobs N]
//               [--stop STR]... [--ignore-eos] [--timeout-s S] [--json]
//   kvserve-cli --target HOST:PORT chat [--message TEXT] [--system TEXT] [sampling flags]
//   kvserve-cli --target HOST:PORT info
//   kvserve-cli --target HOST:PORT tokenize --prompt TEXT
//   kvserve-cli --target HOST:PORT health
//   (any command) [--auth-token-file F | --auth-token T | $KVSERVE_AUTH_TOKEN]
//                 [--tls [--tls-ca F] [--tls-client-cert F --tls-client-key F]]
//
// `chat` at a terminal: Ctrl-C stops an answer, /help lists the slash
// commands, several lines go as one message (a trailing backslash, """ blocks, a
// paste); see client/chat_input.h. `tokenize` prints each token's id and text.
//
// `generate` prints the text as it streams, then the time to first token and
// tokens/s; with --json, one JSON object instead. --logprobs N adds each
// token's log-probability and its N most likely alternatives (a table after
// the text, or a "logprobs" array in the JSON). Flags accept dashes or
// underscores (--max-tokens = --max_tokens).
#include <iostream>

#include "absl/flags/flag.h"
#include "absl/flags/usage.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/command_line.h"
#include "client/auth_token.h"
#include "client/cli_chat.h"
#include "client/cli_output.h"
#include "client/client.h"
#include "client/flag_groups.h"
#include "client/stop_flag.h"
#include "client/token_text.h"
#include "nlohmann/json.hpp"

ABSL_FLAG(std::string, target, "localhost:50051",
          "Server address HOST:PORT, a comma-separated list of them, or dns:///NAME:PORT: each "
          "call goes to the least busy replica and fails over on UNAVAILABLE (docs/routing.md).");
ABSL_FLAG(std::string, prompt, "", "Prompt text (needs a model with a tokenizer).");
ABSL_FLAG(std::string, message, "",
          "chat: the one message to send (empty: an interactive conversation).");
ABSL_FLAG(std::string, system, "", "chat: a system message that starts the conversation.");
ABSL_FLAG(std::string, prompt_ids, "", "Prompt as comma-separated token ids, e.g. 1,2,3.");
ABSL_FLAG(std::optional<int>, max_tokens, std::nullopt,
          "stopping.max_new_tokens (unset: the server's --default_max_new_tokens).");
ABSL_FLAG(double, temperature, 0.0, "sampling.temperature (0 = greedy).");
ABSL_FLAG(int, top_k, 0, "sampling.top_k (0 = off).");
ABSL_FLAG(double, top_p, 1.0, "sampling.top_p.");
ABSL_FLAG(int64_t, seed, -1, "sampling.seed (-1 = unset: random).");
ABSL_FLAG(double, repetition_penalty, 1.0, "sampling.repetition_penalty (1 = off).");
ABSL_FLAG(double, presence_penalty, 0.0, "sampling.presence_penalty, in [-2, 2].");
ABSL_FLAG(double, frequency_penalty, 0.0, "sampling.frequency_penalty, in [-2, 2].");
ABSL_FLAG(double, min_p, 0.0, "sampling.min_p, in [0, 1] (0 = off).");
ABSL_FLAG(int, min_tokens, 0, "sampling.min_new_tokens: no EOS or stop id before this many.");
ABSL_FLAG(int, logprobs, -1,
          "sampling.logprobs: print each token's log-probability and N alternatives, N in "
          "0..20 (-1 = off).");
ABSL_FLAG(kvserve::StopStrings, stop, {},
          "A stop string; repeat the flag for more (--stop '\\n' --stop 'User:'). C escapes "
          "are decoded: \\n \\t \\\\ \\\" \\xNN \\uXXXX; commas are kept.");
ABSL_FLAG(bool, ignore_eos, false, "Keep generating after the end-of-sequence token.");
ABSL_FLAG(double, timeout_s, 0, "Deadline in seconds (0 = none).");
ABSL_FLAG(bool, json, false, "Print one JSON object instead of streaming text.");
ABSL_FLAG(bool, tls, false, "Connect with TLS.");
ABSL_FLAG(std::string, tls_ca, "", "PEM root certificates for --tls (default: system roots).");
ABSL_FLAG(std::string, tls_server_name, "",
          "Name the server certificate must carry, when it differs from --target's host.");
ABSL_FLAG(std::string, tls_client_cert, "",
          "PEM client certificate, for a server with --tls_client_ca (with --tls_client_key).");
ABSL_FLAG(std::string, tls_client_key, "", "PEM private key of --tls_client_cert.");
ABSL_FLAG(std::string, auth_token_file, "",
          "File holding the bearer token (its first line that is not a # comment).");
ABSL_FLAG(std::string, auth_token, "",
          "Bearer token (prefer --auth_token_file or $KVSERVE_AUTH_TOKEN: a flag shows in ps).");

namespace kvserve {
namespace {

absl::StatusOr<std::vector<int32_t>> ParseIds(const std::string& text) {
  std::vector<int32_t> ids;
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    int32_t id;
    if (!absl::SimpleAtoi(part, &id)) {
      return absl::InvalidArgumentError(absl::StrCat("--prompt-ids: not a token id: ", std::string(part)));
    }
    ids.push_back(id);
  }
  return ids;
}

// Sampling and stopping from the flags, for generate and chat alike.
absl::Status FillSettings(v1::SamplingParams* s, v1::StoppingCriteria* st) {
  s->set_temperature(static_cast<float>(absl::GetFlag(FLAGS_temperature)));
  if (absl::GetFlag(FLAGS_top_k) != 0) s->set_top_k(absl::GetFlag(FLAGS_top_k));
  if (absl::GetFlag(FLAGS_top_p) != 1.0) s->set_top_p(static_cast<float>(absl::GetFlag(FLAGS_top_p)));
  if (absl::GetFlag(FLAGS_seed) >= 0) s->set_seed(static_cast<uint64_t>(absl::GetFlag(FLAGS_seed)));
  // Sent only when given, so that the server's defaults and checks apply.
  if (absl::GetFlag(FLAGS_repetition_penalty) != 1.0) {
    s->set_repetition_penalty(static_cast<float>(absl::GetFlag(FLAGS_repetition_penalty)));
  }
  if (absl::GetFlag(FLAGS_presence_penalty) != 0.0) {
    s->set_presence_penalty(static_cast<float>(absl::GetFlag(FLAGS_presence_penalty)));
  }
  if (absl::GetFlag(FLAGS_frequency_penalty) != 0.0) {
    s->set_frequency_penalty(static_cast<float>(absl::GetFlag(FLAGS_frequency_penalty)));
  }
  if (absl::GetFlag(FLAGS_min_p) != 0.0) s->set_min_p(static_cast<float>(absl::GetFlag(FLAGS_min_p)));
  if (absl::GetFlag(FLAGS_min_tokens) < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--min-tokens must be >= 0, got ", absl::GetFlag(FLAGS_min_tokens)));
  }
  s->set_min_new_tokens(static_cast<uint32_t>(absl::GetFlag(FLAGS_min_tokens)));
  if (absl::GetFlag(FLAGS_logprobs) >= 0) {
    s->set_logprobs(static_cast<uint32_t>(absl::GetFlag(FLAGS_logprobs)));
  }
  // Unset: the server's default applies (its --default_max_new_tokens).
  if (const std::optional<int> max_tokens = absl::GetFlag(FLAGS_max_tokens)) {
    if (*max_tokens < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("--max-tokens must be >= 1, got ", *max_tokens));
    }
    st->set_max_new_tokens(static_cast<uint32_t>(*max_tokens));
  }
  for (const std::string& stop : absl::GetFlag(FLAGS_stop).values) st->add_stop(stop);
  st->set_ignore_eos(absl::GetFlag(FLAGS_ignore_eos));
  return absl::OkStatus();
}

absl::StatusOr<v1::GenerateRequest> BuildRequest() {
  v1::GenerateRequest request;
  const std::string prompt = absl::GetFlag(FLAGS_prompt);
  const std::string prompt_ids = absl::GetFlag(FLAGS_prompt_ids);
  if (prompt.empty() == prompt_ids.empty()) {
    return absl::InvalidArgumentError("give exactly one of --prompt and --prompt-ids");
  }
  if (!prompt.empty()) {
    request.set_text(prompt);
  } else {
    auto ids = ParseIds(prompt_ids);
    if (!ids.ok()) return ids.status();
    for (int32_t id : *ids) request.mutable_token_ids()->add_ids(id);
  }
  if (absl::Status s = FillSettings(request.mutable_sampling(), request.mutable_stopping());
      !s.ok()) {
    return s;
  }
  return request;
}

CallOptions Call() {
  CallOptions options;
  if (absl::GetFlag(FLAGS_timeout_s) > 0) options.timeout = absl::Seconds(absl::GetFlag(FLAGS_timeout_s));
  return options;
}

TokenTextFn TextOf(TokenTexts& texts) {
  return [&texts](int32_t id) { return texts.Get(id); };
}

int Fail(const absl::Status& status) {
  std::cerr << "kvserve-cli: " << absl::StatusCodeToString(status.code()) << ": " << status.message()
            << "\n";
  return 1;
}

int Generate(Client& client) {
  auto request = BuildRequest();
  if (!request.ok()) return Fail(request.status());
  const bool json = absl::GetFlag(FLAGS_json);
  StreamResult r = client.GenerateStream(*request, [&](const StreamChunk& chunk) {
    if (json) return;
    if (!chunk.response.text().empty()) {
      std::cout << Printable(chunk.response.text()) << std::flush;
    } else if (chunk.response.token_ids_size() > 0 && request->has_token_ids()) {
      // A model without a tokenizer streams ids only.
      std::cout << absl::StrJoin(chunk.response.token_ids(), " ") << " " << std::flush;
    }
  }, Call());
  if (!r.status.ok()) {
    if (!json) std::cout << "\n";
    return Fail(ToAbslStatus(r.status));
  }
  TokenTexts texts(client, Call());
  if (json) {
    // The text of the noise model may not be valid UTF-8 in pieces; replace, never throw.
    nlohmann::json out = ResultJson(r);
    if (request->sampling().has_logprobs())
      out["logprobs"] = LogprobsJson(r.response, TextOf(texts));
    std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    std::cout << "\n--\n" << SpeedLine(r) << "\n";
    if (request->sampling().has_logprobs()) {
      std::cout << "--\nlogprobs (token \"text\" logprob | top alternatives):\n"
                << LogprobsTable(r.response, TextOf(texts));
    }
  }
  return 0;
}

int Chat(Client& client) {
  ChatCommandOptions options;
  options.message = absl::GetFlag(FLAGS_message);
  options.system = absl::GetFlag(FLAGS_system);
  options.json = absl::GetFlag(FLAGS_json);
  options.call = Call();
  if (absl::Status s =
          FillSettings(options.settings.mutable_sampling(), options.settings.mutable_stopping());
      !s.ok()) {
    return Fail(s);
  }
  return RunChatCommand(client, options);
}

int Info(Client& client) {
  auto info = client.GetModelInfo(Call());
  if (!info.ok()) return Fail(info.status());
  std::cout << info->DebugString();
  return 0;
}

// One line per token: its id and its text, quoted and escaped; --json: an
// array of {"token_id", "text"}.
int Tokenize(Client& client) {
  auto ids = client.Tokenize(absl::GetFlag(FLAGS_prompt), true, Call());
  if (!ids.ok()) return Fail(ids.status());
  TokenTexts texts(client, Call());
  if (absl::GetFlag(FLAGS_json)) {
    nlohmann::json out = nlohmann::json::array();
    for (int32_t id : *ids) {
      nlohmann::json token = {{"token_id", id}};
      if (std::optional<std::string> text = texts.Get(id)) token["text"] = *text;
      out.push_back(token);
    }
    std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return 0;
  }
  for (int32_t id : *ids) {
    std::optional<std::string> text = texts.Get(id);
    std::cout << absl::StrFormat("%6d", id) << "  " << (text ? QuotedToken(*text) : "") << "\n";
  }
  std::cout << "(" << ids->size() << " tokens)\n";
  return 0;
}

}  // namespace
}  // namespace kvserve

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "kvserve-cli --target HOST:PORT (generate|chat|info|tokenize|health) [flags]\n"
      "  generate --prompt TEXT | --prompt-ids 1,2,3 [--max-tokens N] [--temperature T] "
      "[--seed S] [--repetition-penalty R] [--presence-penalty P] [--frequency-penalty F] "
      "[--min-p P] [--min-tokens N] [--logprobs N] [--json]\n"
      "  chat [--message TEXT] [--system TEXT] (no --message: an interactive conversation)");
  kvserve::CommandLineSpec spec;
  spec.groups = kvserve::CliFlagGroups();
  std::vector<char*> positional = kvserve::ParseCommandLine(argc, argv, spec);
  if (positional.size() != 2) {
    std::cerr << "usage: kvserve-cli --target HOST:PORT (generate|chat|info|tokenize|health) [flags]\n";
    return 2;
  }
  const std::string command = positional[1];
  kvserve::ClientOptions options;
  options.targets = {absl::GetFlag(FLAGS_target)};
  options.use_tls = absl::GetFlag(FLAGS_tls);
  options.tls_root_certs_file = absl::GetFlag(FLAGS_tls_ca);
  options.tls_server_name = absl::GetFlag(FLAGS_tls_server_name);
  options.tls_client_cert_file = absl::GetFlag(FLAGS_tls_client_cert);
  options.tls_client_key_file = absl::GetFlag(FLAGS_tls_client_key);
  absl::StatusOr<std::string> token =
      kvserve::ResolveAuthToken(absl::GetFlag(FLAGS_auth_token_file), absl::GetFlag(FLAGS_auth_token));
  if (!token.ok()) return kvserve::Fail(token.status());
  options.auth_token = *token;
  auto client = kvserve::Client::Connect(options);
  if (!client.ok()) return kvserve::Fail(client.status());
  if (command == "generate") return kvserve::Generate(**client);
  if (command == "chat") return kvserve::Chat(**client);
  if (command == "info") return kvserve::Info(**client);
  if (command == "tokenize") return kvserve::Tokenize(**client);
  if (command == "health") {
    absl::Status s = (*client)->WaitUntilServing(absl::Seconds(absl::GetFlag(FLAGS_timeout_s) > 0 ? absl::GetFlag(FLAGS_timeout_s) : 1));
    if (!s.ok()) return kvserve::Fail(s);
    std::cout << "SERVING\n";
    return 0;
  }
  std::cerr << "kvserve-cli: unknown command \"" << command << "\"\n";
  return 2;
}
