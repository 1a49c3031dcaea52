#include "client/cli_output.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/token_text.h"

namespace kvserve {

std::string Printable(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) {
      out += absl::StrCat("\\x", absl::Hex(c, absl::kZeroPad2));
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

StreamSpeed SpeedOf(const StreamResult& r) {
  StreamSpeed speed;
  speed.tokens = r.response.token_ids_size();
  speed.ttft_ms = absl::ToDoubleMilliseconds(r.first_chunk - r.sent);
  const double e2e_s = absl::ToDoubleSeconds(r.done - r.sent);
  speed.e2e_ms = e2e_s * 1000;
  speed.tokens_per_s = e2e_s > 0 ? speed.tokens / e2e_s : 0;
  const double decode_s = absl::ToDoubleSeconds(r.done - r.first_chunk);
  speed.decode_tokens_per_s =
      speed.tokens > 1 && decode_s > 0 ? (speed.tokens - 1) / decode_s : 0;
  return speed;
}

std::string SpeedLine(const StreamResult& r) {
  const StreamSpeed s = SpeedOf(r);
  return absl::StrFormat(
      "ttft %.1f ms | %d tokens in %.1f ms | %.1f tokens/s (decode %.1f tokens/s) | finish: %s | "
      "prompt %d tokens",
      s.ttft_ms, s.tokens, s.e2e_ms, s.tokens_per_s, s.decode_tokens_per_s,
      FinishReasonName(r.response.finish_reason()), r.response.usage().prompt_tokens());
}

nlohmann::json ResultJson(const StreamResult& r) {
  const StreamSpeed s = SpeedOf(r);
  nlohmann::json out;
  out["request_id"] = r.response.request_id();
  out["token_ids"] =
      std::vector<int32_t>(r.response.token_ids().begin(), r.response.token_ids().end());
  out["text"] = r.response.text();
  out["finish_reason"] = FinishReasonName(r.response.finish_reason());
  out["prompt_tokens"] = r.response.usage().prompt_tokens();
  out["completion_tokens"] = r.response.usage().completion_tokens();
  out["ttft_ms"] = s.ttft_ms;
  out["e2e_ms"] = s.e2e_ms;
  out["tokens_per_s"] = s.tokens_per_s;
  out["decode_tokens_per_s"] = s.decode_tokens_per_s;
  return out;
}

nlohmann::json LogprobsJson(const v1::GenerateResponse& response, const TokenTextFn& text_of) {
  auto entry = [&](int32_t id, float logprob) {
    nlohmann::json j = {{"token_id", id}};
    if (text_of) {
      if (std::optional<std::string> text = text_of(id)) j["text"] = *text;
    }
    j["logprob"] = logprob;
    return j;
  };
  nlohmann::json all = nlohmann::json::array();
  for (const v1::TokenLogprobs& l : response.logprobs()) {
    nlohmann::json top = nlohmann::json::array();
    for (const v1::TokenLogprob& t : l.top()) top.push_back(entry(t.token_id(), t.logprob()));
    nlohmann::json j = entry(l.token_id(), l.logprob());
    j["top"] = top;
    all.push_back(j);
  }
  return all;
}

std::string LogprobsTable(const v1::GenerateResponse& response, const TokenTextFn& text_of) {
  auto token = [&](int32_t id, float logprob) {
    std::string out = absl::StrCat(id);
    if (text_of) {
      if (std::optional<std::string> text = text_of(id))
        absl::StrAppend(&out, " ", QuotedToken(*text));
    }
    absl::StrAppendFormat(&out, " %.4f", logprob);
    return out;
  };
  std::string out;
  for (const v1::TokenLogprobs& l : response.logprobs()) {
    out += token(l.token_id(), l.logprob());
    for (int i = 0; i < l.top_size(); ++i) {
      out += i == 0 ? " | " : ", ";
      out += token(l.top(i).token_id(), l.top(i).logprob());
    }
    out += "\n";
  }
  return out;
}

}  // namespace kvserve
