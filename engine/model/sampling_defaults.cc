#include "engine/model/sampling_defaults.h"

#include <cmath>
#include <limits>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/logging.h"
#include "nlohmann/json.hpp"

namespace kvserve {

std::string SamplingDefaults::ToString() const {
  std::vector<std::string> parts;
  if (temperature) parts.push_back(absl::StrCat("temperature ", *temperature));
  if (top_p) parts.push_back(absl::StrCat("top_p ", *top_p));
  if (top_k) parts.push_back(absl::StrCat("top_k ", *top_k));
  if (min_p) parts.push_back(absl::StrCat("min_p ", *min_p));
  if (repetition_penalty) parts.push_back(absl::StrCat("repetition_penalty ", *repetition_penalty));
  return absl::StrJoin(parts, ", ");
}

void SamplingDefaults::Set(absl::string_view name, double value, absl::string_view key) {
  auto ignore = [&](absl::string_view range) {
    KV_LOG(WARNING) << source << ": " << key << " = " << value << " is ignored (" << name
                    << " must be " << range << ")";
  };
  if (!std::isfinite(value)) return ignore("finite");
  if (name == "temperature") {
    if (value < 0) return ignore(">= 0");
    temperature = static_cast<float>(value);
  } else if (name == "top_p") {
    if (!(value > 0 && value <= 1)) return ignore("in (0, 1]");
    top_p = static_cast<float>(value);
  } else if (name == "top_k") {
    if (value != std::floor(value) || value > std::numeric_limits<int32_t>::max()) {
      return ignore("an integer");
    }
    top_k = value < 0 ? 0 : static_cast<int32_t>(value);
  } else if (name == "min_p") {
    if (!(value >= 0 && value <= 1)) return ignore("in [0, 1]");
    min_p = static_cast<float>(value);
  } else if (name == "repetition_penalty") {
    if (!(value > 0)) return ignore("> 0");
    repetition_penalty = static_cast<float>(value);
  }
}

SamplingDefaults SamplingDefaultsFromGenerationConfig(const nlohmann::json& config) {
  SamplingDefaults d;
  d.source = "generation_config.json";
  if (!config.is_object()) return d;
  auto do_sample = config.find("do_sample");
  const bool greedy =
      do_sample != config.end() && do_sample->is_boolean() && !do_sample->get<bool>();
  for (const char* name : {"temperature", "top_p", "top_k", "min_p", "repetition_penalty"}) {
    auto it = config.find(name);
    if (it == config.end() || it->is_null()) continue;
    if (!it->is_number()) {
      KV_LOG(WARNING) << d.source << ": \"" << name << "\" is ignored (not a number)";
      continue;
    }
    if (greedy && std::string_view(name) != "repetition_penalty") continue;
    d.Set(name, it->get<double>(), absl::StrCat("\"", name, "\""));
  }
  return d;
}

}  // namespace kvserve
