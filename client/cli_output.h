// What kvserve-cli prints: terminal-safe text and the speed of a stream.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "client/client.h"
#include "nlohmann/json.hpp"

namespace kvserve {

/// Control characters (a random model emits ESC sequences too) as \xNN, so
/// streamed text cannot drive the terminal.
std::string Printable(const std::string& text);

struct StreamSpeed {
  int tokens = 0;
  double ttft_ms = 0;
  double e2e_ms = 0;
  double tokens_per_s = 0;         // all tokens over the whole call
  double decode_tokens_per_s = 0;  // tokens after the first, over the time after it
};
StreamSpeed SpeedOf(const StreamResult& result);

/// "ttft 12 ms | 30 tokens in 400 ms | 75 tokens/s (decode 80 tokens/s) | finish: eos | prompt 20 tokens"
std::string SpeedLine(const StreamResult& result);

/// The result as one JSON object (text, ids, finish, usage, speed).
nlohmann::json ResultJson(const StreamResult& result);

/// A token's text, or nullopt when unknown (see TokenTexts).
using TokenTextFn = std::function<std::optional<std::string>(int32_t)>;

/// The response's log-probabilities (SamplingParams.logprobs) as a JSON array:
/// [{"token_id", "text", "logprob", "top": [{"token_id", "text", "logprob"}, ...]}, ...];
/// "text" only where `text_of` knows it.
nlohmann::json LogprobsJson(const v1::GenerateResponse& response, const TokenTextFn& text_of = {});

/// One line per token: id "text" logprob | id "text" logprob, ... (the top
/// alternatives); the text quoted and escaped (QuotedToken), left out where unknown.
std::string LogprobsTable(const v1::GenerateResponse& response, const TokenTextFn& text_of = {});

}  // namespace kvserve
