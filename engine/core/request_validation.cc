#include "engine/core/request_validation.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "base/ceil_div.h"

namespace kvserve {
namespace {

absl::Status Invalid(auto&&... parts) {
  return absl::InvalidArgumentError(absl::StrCat(parts...));
}

}  // namespace

uint32_t EffectiveMaxNewTokens(const Request& r, const ModelInfo& m) {
  if (r.stopping.max_new_tokens) return *r.stopping.max_new_tokens;
  const int room = m.max_context - static_cast<int>(r.prompt.size());
  return static_cast<uint32_t>(std::max(0, std::min<int>(room, m.default_max_new_tokens)));
}

absl::Status ValidateRequest(const Request& r, const ModelInfo& m) {
  const int prompt_len = static_cast<int>(r.prompt.size());
  if (prompt_len == 0) return Invalid("token_ids.ids must not be empty");
  if (prompt_len >= m.max_context) {
    return Invalid("prompt of ", prompt_len, " tokens is too long: the model's context is ",
                   m.max_context, " tokens, and at least one must be left to generate");
  }
  for (int i = 0; i < prompt_len; ++i) {
    if (r.prompt[i] < 0 || r.prompt[i] >= m.vocab_size) {
      return Invalid("token_ids.ids[", i, "] = ", r.prompt[i], " is outside the vocabulary [0, ",
                     m.vocab_size, ")");
    }
  }

  const SamplingOptions& s = r.sampling;
  if (!std::isfinite(s.temperature) || s.temperature < 0.f) {
    return Invalid("sampling.temperature must be a finite number >= 0, got ", s.temperature);
  }
  if (s.top_k < 0) return Invalid("sampling.top_k must be >= 0 (0 = off), got ", s.top_k);
  if (!(s.top_p > 0.f && s.top_p <= 1.f)) {
    return Invalid("sampling.top_p must be in (0, 1], got ", s.top_p);
  }

  if (!(std::isfinite(s.repetition_penalty) && s.repetition_penalty > 0.f)) {
    return Invalid("sampling.repetition_penalty must be a finite number > 0 (1 = off), got ",
                   s.repetition_penalty);
  }
  const float pf = kMaxAbsPresenceFrequencyPenalty;
  if (!(s.presence_penalty >= -pf && s.presence_penalty <= pf)) {
    return Invalid("sampling.presence_penalty must be in [-", pf, ", ", pf, "], got ",
                   s.presence_penalty);
  }
  if (!(s.frequency_penalty >= -pf && s.frequency_penalty <= pf)) {
    return Invalid("sampling.frequency_penalty must be in [-", pf, ", ", pf, "], got ",
                   s.frequency_penalty);
  }
  if (!(s.min_p >= 0.f && s.min_p <= 1.f)) {
    return Invalid("sampling.min_p must be in [0, 1], got ", s.min_p);
  }
  if (s.logprobs && *s.logprobs > kMaxTopLogprobs) {
    return Invalid("sampling.logprobs must be in [0, ", kMaxTopLogprobs, "], got ", *s.logprobs);
  }

  const StoppingOptions& st = r.stopping;
  if (r.constraint != nullptr && st.ignore_eos) {
    return Invalid("stopping.ignore_eos cannot be combined with a constraint (sampling.",
                   r.constraint->description(),
                   "): the output ends with the end-of-sequence token where the constraint "
                   "is complete");
  }
  if (r.constraint != nullptr && m.eos_token_ids.empty() && st.stop_token_ids.empty()) {
    return Invalid("a constraint needs an end token: the model has no end-of-sequence id; give "
                   "stopping.stop_token_ids");
  }
  if (st.max_new_tokens) {
    if (*st.max_new_tokens == 0) return Invalid("stopping.max_new_tokens must be >= 1, got 0");
    if (*st.max_new_tokens > static_cast<uint32_t>(m.max_context)) {
      return Invalid("stopping.max_new_tokens = ", *st.max_new_tokens,
                     " exceeds the model's context of ", m.max_context, " tokens");
    }
    if (prompt_len + int64_t{*st.max_new_tokens} > m.max_context) {
      return Invalid("prompt (", prompt_len, " tokens) + stopping.max_new_tokens (",
                     *st.max_new_tokens, ") = ", prompt_len + int64_t{*st.max_new_tokens},
                     " exceeds the model's context of ", m.max_context, " tokens");
    }
  }
  if (st.stop.size() > kMaxStopStrings) {
    return Invalid("stopping.stop has ", st.stop.size(), " strings; at most ", kMaxStopStrings,
                   " are allowed");
  }
  for (size_t i = 0; i < st.stop.size(); ++i) {
    if (st.stop[i].empty() || st.stop[i].size() > kMaxStopStringBytes) {
      return Invalid("stopping.stop[", i, "] must be 1 to ", kMaxStopStringBytes,
                     " bytes, got ", st.stop[i].size());
    }
  }
  if (!st.stop.empty() && !m.has_tokenizer) {
    return Invalid("stopping.stop needs a tokenizer, and this model has none (no tokenizer.json)");
  }
  if (st.stop_token_ids.size() > kMaxStopTokenIds) {
    return Invalid("stopping.stop_token_ids has ", st.stop_token_ids.size(), " ids; at most ",
                   kMaxStopTokenIds, " are allowed");
  }
  for (size_t i = 0; i < st.stop_token_ids.size(); ++i) {
    const int32_t id = st.stop_token_ids[i];
    if (id < 0 || id >= m.vocab_size) {
      return Invalid("stopping.stop_token_ids[", i, "] = ", id, " is outside the vocabulary [0, ",
                     m.vocab_size, ")");
    }
  }

  if (s.min_new_tokens > EffectiveMaxNewTokens(r, m)) {
    return Invalid("sampling.min_new_tokens (", s.min_new_tokens,
                   ") must be <= stopping.max_new_tokens (", EffectiveMaxNewTokens(r, m), ")");
  }

  // A sequence must fit in the KV pool on its own, or it could never finish.
  const int64_t total = prompt_len + int64_t{EffectiveMaxNewTokens(r, m)};
  const int64_t blocks = CeilDiv(total, int64_t{m.kv_block_size});
  if (blocks > m.kv_num_blocks) {
    return Invalid("prompt + max_new_tokens = ", total, " tokens needs ", blocks,
                   " KV blocks, more than the whole pool of ", m.kv_num_blocks,
                   " (--num_kv_blocks); lower stopping.max_new_tokens or shorten the prompt");
  }
  return absl::OkStatus();
}

}  // namespace kvserve
