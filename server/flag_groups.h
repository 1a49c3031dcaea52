// How `kvserve --help` groups the server's flags. The flags stay in the files
// that define them; this table only names them (or their prefix).
#pragma once

#include <vector>

#include "base/flag_help.h"

namespace kvserve {

/// The server's --help groups, in the order --help prints them.
std::vector<FlagGroup> ServerFlagGroups();

}  // namespace kvserve
