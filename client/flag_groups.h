// How `kvserve-cli --help` and `kvserve-bench --help` group their flags. The
// flags stay in the files that define them; these tables only name them.
#pragma once

#include <vector>

#include "base/flag_help.h"

namespace kvserve {

/// kvserve-cli's --help groups, in the order --help prints them.
std::vector<FlagGroup> CliFlagGroups();

/// kvserve-bench's --help groups, in the order --help prints them.
std::vector<FlagGroup> BenchFlagGroups();

}  // namespace kvserve
