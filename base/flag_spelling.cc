#include "base/flag_spelling.h"

#include <algorithm>

namespace kvserve {

std::optional<FlagArg> SplitFlagArg(absl::string_view arg) {
  if (arg.size() < 2 || arg[0] != '-' || arg == "--") return std::nullopt;
  FlagArg flag;
  flag.dashes = arg.substr(0, arg[1] == '-' ? 2 : 1);
  absl::string_view body = arg.substr(flag.dashes.size());
  if (body.empty()) return std::nullopt;
  const size_t eq = body.find('=');
  flag.name = body.substr(0, eq);
  if (eq != absl::string_view::npos) flag.value = body.substr(eq + 1);
  return flag;
}

std::string CanonicalFlagName(absl::string_view name) {
  std::string out(name);
  std::replace(out.begin(), out.end(), '-', '_');
  return out;
}

std::string SpellLike(absl::string_view canonical, absl::string_view typed) {
  std::string out(canonical);
  if (typed.find('-') != absl::string_view::npos) std::replace(out.begin(), out.end(), '_', '-');
  return out;
}

int EditDistance(absl::string_view a, absl::string_view b) {
  // d[i][j]: distance between a[0, i) and b[0, j); three rows suffice.
  const size_t n = b.size();
  std::vector<int> before(n + 1), previous(n + 1), current(n + 1);
  for (size_t j = 0; j <= n; ++j) previous[j] = static_cast<int>(j);
  for (size_t i = 1; i <= a.size(); ++i) {
    current[0] = static_cast<int>(i);
    for (size_t j = 1; j <= n; ++j) {
      const int substitute = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, substitute});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        current[j] = std::min(current[j], before[j - 2] + 1);
      }
    }
    std::swap(before, previous);
    std::swap(previous, current);
  }
  return previous[n];
}

std::optional<std::string> NearestName(absl::string_view name,
                                       const std::vector<std::string>& candidates) {
  const int limit = name.size() <= 4 ? 1 : name.size() <= 8 ? 2 : 3;
  std::optional<std::string> best;
  int best_distance = limit + 1;
  for (const std::string& candidate : candidates) {
    const int distance = EditDistance(name, candidate);
    if (distance < best_distance || (distance == best_distance && best && candidate < *best)) {
      best = candidate;
      best_distance = distance;
    }
  }
  return best;
}

}  // namespace kvserve
