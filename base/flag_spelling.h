// How a command-line flag is spelled: the pieces of "--name=value", the one
// canonical name behind "--max-num-seqs" and "--max_num_seqs", and the known
// name nearest to a misspelt one. Pure string functions: base/command_line.cc
// applies them to the flag registry.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace kvserve {

/// A flag argument split up: "--max-num-seqs=4" is {"--", "max-num-seqs", "4"}.
struct FlagArg {
  absl::string_view dashes;                // "-" or "--", as typed
  absl::string_view name;                  // as typed
  std::optional<absl::string_view> value;  // after '=', if any
};

/// The pieces of `arg` when it is a flag ("-x", "--x", "--x=v"); nullopt for a
/// positional argument, "-" (stdin) and the "--" terminator.
std::optional<FlagArg> SplitFlagArg(absl::string_view arg);

/// `name` with every '-' turned into '_': the spelling Abseil registers.
std::string CanonicalFlagName(absl::string_view name);

/// `canonical` spelt the way the user spelt `typed`: with dashes when `typed`
/// has one, so that a suggestion reads like what was typed.
std::string SpellLike(absl::string_view canonical, absl::string_view typed);

/// Optimal string alignment distance: insertions, deletions, substitutions
/// and swaps of two neighbours each cost 1.
int EditDistance(absl::string_view a, absl::string_view b);

/// The candidate nearest to `name` (canonical spelling), when it is near
/// enough to be a likely typo: at most 1 edit for names up to 4 characters,
/// 2 up to 8, 3 beyond. Ties go to the alphabetically first.
std::optional<std::string> NearestName(absl::string_view name,
                                       const std::vector<std::string>& candidates);

}  // namespace kvserve
