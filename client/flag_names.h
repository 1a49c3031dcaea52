// Lets command lines spell flags with dashes (--max-tokens) as well as the
// underscores Abseil flags need (--max_tokens).
#pragma once

#include <string>
#include <vector>

namespace kvserve {

/// Returns argv with every "--name-with-dashes[=value]" rewritten to
/// "--name_with_dashes[=value]" (values untouched). The strings live as long
/// as the process.
std::vector<char*> NormalizeFlagNames(int argc, char** argv);

}  // namespace kvserve
