// --help: a program's own flags, each with its description, under the group
// titles the program chooses. Flags stay where they are defined; a group
// names them (or a prefix of their names), so grouping needs no file moves.
#pragma once

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace kvserve {

/// A titled set of flags: each entry is a flag name, or a prefix ending in
/// '*' ("cuda_*"). A flag goes to the first group with an entry it matches;
/// within a group, flags follow the order of the entries.
struct FlagGroup {
  std::string title;
  std::vector<std::string> names;
};

/// What the help shows of one flag.
struct FlagDoc {
  std::string name;
  std::string type;  // "INT", "NUMBER", "TEXT", "LIST"; empty for a bool
  std::string default_value;
  std::string help;
};

/// The help text: `usage`, then every flag of `flags` whose name or help
/// contains `filter` (all when empty), under its group's title; flags no group
/// names come last, under "Other". Lines wrap at 100 columns.
std::string FormatFlagHelp(absl::string_view usage, const std::vector<FlagGroup>& groups,
                           std::vector<FlagDoc> flags, absl::string_view filter);

}  // namespace kvserve
