#include "client/bench/workload.h"

#include <algorithm>
#include <cmath>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace kvserve::bench {
namespace {

// Random lower-case words: roughly one token per 4 characters on real tokenizers.
std::string RandomText(int approx_tokens, std::mt19937_64& rng) {
  std::string text;
  while (static_cast<int>(text.size()) < approx_tokens * 4) {
    const int len = 2 + static_cast<int>(rng() % 8);
    if (!text.empty()) text += ' ';
    for (int i = 0; i < len; ++i) text += static_cast<char>('a' + rng() % 26);
  }
  return text;
}

}  // namespace

absl::StatusOr<Workload> Workload::Create(const BenchConfig& config, int vocab_size,
                                          int max_context) {
  Workload w;
  w.config_ = config;
  w.vocab_size_ = vocab_size;
  w.max_context_ = max_context;
  if (config.prompts_file.empty()) return w;
  std::ifstream in(config.prompts_file);
  if (!in) return absl::NotFoundError(absl::StrCat("--prompts_file: cannot read ", config.prompts_file));
  std::string line;
  int line_number = 0;
  std::mt19937_64 rng(config.seed);
  while (std::getline(in, line)) {
    ++line_number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    auto error = [&](absl::string_view what) {
      return absl::InvalidArgumentError(absl::StrCat(config.prompts_file, ":", line_number, ": ", what));
    };
    if (j.is_discarded() || !j.is_object()) return error("not a JSON object");
    PlannedRequest p;
    const char* text_key = j.contains("prompt") ? "prompt" : "text";
    if (j.contains(text_key) && j[text_key].is_string()) {
      p.request.set_text(j[text_key].get<std::string>());
      p.prompt_tokens = static_cast<int>(p.request.text().size() / 4);
    } else if (j.contains("token_ids") && j["token_ids"].is_array()) {
      for (const auto& id : j["token_ids"]) {
        if (!id.is_number_integer()) return error("token_ids must be integers");
        p.request.mutable_token_ids()->add_ids(id.get<int32_t>());
      }
      p.prompt_tokens = p.request.token_ids().ids_size();
    } else {
      return error("needs \"prompt\" or \"text\" (a string), or \"token_ids\" (a list)");
    }
    const char* max_key = j.contains("max_new_tokens") ? "max_new_tokens"
                          : j.contains("max_tokens")   ? "max_tokens"
                                                       : nullptr;
    if (max_key == nullptr) {
      p.output_tokens = w.SampleLength(config.output, rng);
    } else {
      const nlohmann::json& value = j[max_key];
      if (!value.is_number_integer() || value.get<int64_t>() < 1 ||
          value.get<int64_t>() > (1 << 20)) {
        return error(absl::StrCat(max_key, " must be an integer in [1, 2^20]"));
      }
      p.output_tokens = value.get<int>();
    }
    w.from_file_.push_back(std::move(p));
  }
  if (w.from_file_.empty()) return absl::InvalidArgumentError("--prompts_file has no prompts");
  return w;
}

int Workload::SampleLength(const LengthSpec& spec, std::mt19937_64& rng) const {
  const int max = spec.max > 0 ? spec.max : 2 * spec.mean;
  double value = spec.mean;
  switch (spec.dist) {
    case LengthDist::kFixed: break;
    case LengthDist::kUniform: {
      const int lo = std::max(spec.min, 2 * spec.mean - max);
      value = lo + static_cast<double>(rng() % static_cast<uint64_t>(std::max(1, max - lo + 1)));
      break;
    }
    case LengthDist::kLogNormal: {
      std::lognormal_distribution<double> dist(std::log(static_cast<double>(spec.mean)), spec.sigma);
      value = dist(rng);
      break;
    }
  }
  return std::clamp(static_cast<int>(std::lround(value)), spec.min, std::max(spec.min, max));
}

PlannedRequest Workload::Get(int64_t index) const {
  std::mt19937_64 rng(config_.seed * 0x9e3779b97f4a7c15ull + static_cast<uint64_t>(index));
  PlannedRequest p;
  if (!from_file_.empty()) {
    p = from_file_[index % from_file_.size()];
  } else {
    p.prompt_tokens = SampleLength(config_.prompt, rng);
    p.output_tokens = SampleLength(config_.output, rng);
    // Leave room in the context for the output.
    p.prompt_tokens = std::max(1, std::min(p.prompt_tokens, max_context_ - p.output_tokens));
    if (config_.prompt_kind == PromptKind::kText) {
      p.request.set_text(RandomText(p.prompt_tokens, rng));
    } else {
      // Ids from 3 up: 0-2 are special tokens in most vocabularies.
      const int low = std::min(3, vocab_size_ - 1);
      for (int i = 0; i < p.prompt_tokens; ++i) {
        p.request.mutable_token_ids()->add_ids(low + static_cast<int32_t>(rng() % (vocab_size_ - low)));
      }
    }
  }
  p.request.set_request_id(absl::StrCat("bench-", index));
  p.request.mutable_stopping()->set_max_new_tokens(static_cast<uint32_t>(p.output_tokens));
  p.request.mutable_stopping()->set_ignore_eos(config_.ignore_eos);
  p.request.mutable_sampling()->set_temperature(static_cast<float>(config_.temperature));
  if (config_.temperature > 0) p.request.mutable_sampling()->set_seed(config_.seed + index);
  if (!config_.json_schema.empty()) p.request.mutable_sampling()->set_json_schema(config_.json_schema);
  return p;
}

}  // namespace kvserve::bench
