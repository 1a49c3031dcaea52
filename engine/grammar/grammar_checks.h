// Checks a Grammar before the matcher runs it: the matcher expands rules
// top-down, so a rule that can call itself without consuming a byte, other
// than as the last element of an alternative (a tail call, which reuses its
// caller's return point), would grow the stack forever.
#pragma once

#include <string_view>

#include "absl/status/status.h"
#include "engine/grammar/grammar.h"

namespace kvserve::grammar {

/// INVALID_ARGUMENT "<what>: rule 'expr' is left-recursive (...)" or OK.
absl::Status CheckGrammar(const Grammar& grammar, std::string_view what);

}  // namespace kvserve::grammar
