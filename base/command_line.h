// One command-line parser for kvserve, kvserve-cli and kvserve-bench: Abseil
// flags, with the spellings and help a user expects (docs/command_line.md).
#pragma once

#include <string>
#include <vector>

#include "base/flag_help.h"

namespace kvserve {

/// What a program tells the parser about itself.
struct CommandLineSpec {
  /// How --help groups the program's own flags.
  std::vector<FlagGroup> groups;
  /// Added to the --version line (e.g. whether the CUDA backend is built).
  std::string version_note;
  /// Positional arguments the program takes at most (more: an error); -1: any
  /// number, the program checks them.
  int max_positional = -1;
};

/// What the parser does with a command line before Abseil sees it.
struct PreparedCommandLine {
  enum class Action { kParse, kHelp, kVersion, kError };
  Action action = Action::kParse;
  /// kParse: the arguments to hand Abseil, flag names canonical.
  std::vector<std::string> args;
  /// kHelp: the --help=WORD filter; kError: the message.
  std::string text;
};

/// Rewrites `args` (args[0] is the program) for Abseil: "--max-num-seqs" and
/// "--max_num_seqs" both become "--max_num_seqs", "--no-cuda-graphs" becomes
/// "--nocuda_graphs" (a bool's "off"). Values and everything after "--" are
/// untouched. --help[=WORD], -h and --helpshort ask for help, --version for
/// the version; an unknown flag is an error that names the nearest known one
/// ("unknown flag --max_num_seq; did you mean --max_num_seqs?").
PreparedCommandLine PrepareCommandLine(const std::vector<std::string>& args);

/// The help text of the program's own flags (Abseil's are left to --helpfull),
/// after the usage message the program set with absl::SetProgramUsageMessage.
std::string CommandLineHelp(const CommandLineSpec& spec, const std::string& filter);

/// Parses argv: prints help or the version (stdout, exit 0), or refuses an
/// unknown flag, a bad value or a stray positional argument (stderr, exit 2).
/// Returns argv[0] and the positional arguments, as absl::ParseCommandLine.
std::vector<char*> ParseCommandLine(int argc, char** argv, const CommandLineSpec& spec);

}  // namespace kvserve
