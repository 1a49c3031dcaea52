#include "base/flag_help.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace kvserve {
namespace {

constexpr size_t kWidth = 100;
constexpr absl::string_view kIndent = "      ";

bool Matches(absl::string_view entry, absl::string_view name) {
  if (absl::EndsWith(entry, "*")) return absl::StartsWith(name, entry.substr(0, entry.size() - 1));
  return entry == name;
}

// (group index, entry index) of the first entry that names the flag;
// (groups.size(), 0) for a flag no group names.
std::pair<size_t, size_t> Place(const std::vector<FlagGroup>& groups, absl::string_view name) {
  for (size_t g = 0; g < groups.size(); ++g) {
    for (size_t e = 0; e < groups[g].names.size(); ++e) {
      if (Matches(groups[g].names[e], name)) return {g, e};
    }
  }
  return {groups.size(), 0};
}

void AppendWrapped(absl::string_view text, std::string& out) {
  std::string line(kIndent);
  for (absl::string_view word : absl::StrSplit(text, ' ', absl::SkipEmpty())) {
    if (line.size() > kIndent.size() && line.size() + 1 + word.size() > kWidth) {
      absl::StrAppend(&out, line, "\n");
      line = std::string(kIndent);
    }
    absl::StrAppend(&line, line.size() > kIndent.size() ? " " : "", word);
  }
  if (line.size() > kIndent.size()) absl::StrAppend(&out, line, "\n");
}

void AppendFlag(const FlagDoc& flag, std::string& out) {
  absl::StrAppend(&out, "  --", flag.name);
  if (flag.type.empty()) {
    absl::StrAppend(&out, " (bool, default ", flag.default_value, ")\n");
  } else {
    absl::StrAppend(&out, "=", flag.type);
    if (!flag.default_value.empty()) absl::StrAppend(&out, " (default ", flag.default_value, ")");
    absl::StrAppend(&out, "\n");
  }
  AppendWrapped(flag.help, out);
}

}  // namespace

std::string FormatFlagHelp(absl::string_view usage, const std::vector<FlagGroup>& groups,
                           std::vector<FlagDoc> flags, absl::string_view filter) {
  std::erase_if(flags, [&](const FlagDoc& f) {
    return !filter.empty() && !absl::StrContains(f.name, filter) &&
           !absl::StrContains(absl::AsciiStrToLower(f.help), absl::AsciiStrToLower(filter));
  });
  std::sort(flags.begin(), flags.end(), [&](const FlagDoc& a, const FlagDoc& b) {
    return std::make_pair(Place(groups, a.name), absl::string_view(a.name)) <
           std::make_pair(Place(groups, b.name), absl::string_view(b.name));
  });
  std::string out(usage);
  if (!out.empty() && out.back() != '\n') out += '\n';
  size_t current = groups.size() + 1;
  for (const FlagDoc& flag : flags) {
    const size_t group = Place(groups, flag.name).first;
    if (group != current) {
      current = group;
      absl::StrAppend(&out, "\n", group < groups.size() ? groups[group].title : "Other", ":\n");
    }
    AppendFlag(flag, out);
  }
  if (flags.empty()) absl::StrAppend(&out, "\nNo flag matches \"", filter, "\".\n");
  return out;
}

}  // namespace kvserve
