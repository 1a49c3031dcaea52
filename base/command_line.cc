#include "base/command_line.h"

#include <cstdint>
#include <cstdlib>
#include <deque>
#include <iostream>
#include <optional>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/flags/usage.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/flag_spelling.h"
#include "base/version.h"

namespace kvserve {
namespace {

// Usage exit code: a command line the program cannot run (as argparse and
// most shells' builtins do).
constexpr int kUsageError = 2;

// Abseil's own flags (--flagfile, --helpfull, ...) come from its sources; the
// program's are the rest.
bool IsOwnFlag(const absl::CommandLineFlag& flag) {
  return !flag.IsRetired() && !absl::StrContains(flag.Filename(), "absl/");
}

std::string TypeLabel(const absl::CommandLineFlag& flag) {
  if (flag.IsOfType<bool>()) return "";
  // std::optional<int>: an INT that may be left unset (kvserve-cli --max_tokens).
  if (flag.IsOfType<int>() || flag.IsOfType<int64_t>() || flag.IsOfType<uint64_t>() ||
      flag.IsOfType<uint32_t>() || flag.IsOfType<std::optional<int>>()) {
    return "INT";
  }
  if (flag.IsOfType<double>() || flag.IsOfType<float>()) return "NUMBER";
  if (flag.IsOfType<std::string>()) return "TEXT";
  if (flag.IsOfType<std::vector<std::string>>()) return "A,B,...";
  return "VALUE";
}

std::vector<std::string> OwnFlagNames() {
  std::vector<std::string> names;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (IsOwnFlag(*flag)) names.emplace_back(name);
  }
  return names;
}

bool IsHelp(absl::string_view name) {
  return name == "help" || name == "helpshort" || (name == "h" && !absl::FindCommandLineFlag("h"));
}

// Abseil's usage flags, which it recognises by name (no registered flag):
// --help, --helpshort and --version are ours, the others pass through.
bool IsAbseilUsageFlag(absl::string_view name) {
  return name == "helpfull" || name == "helppackage" || name == "helpon" || name == "helpmatch" ||
         name == "only_check_args";
}

// The bool flag that "--no_NAME" / "--noNAME" turns off, if any.
absl::CommandLineFlag* NegatedBool(absl::string_view canonical) {
  if (!absl::StartsWith(canonical, "no")) return nullptr;
  absl::string_view rest = canonical.substr(2);
  if (absl::StartsWith(rest, "_")) rest.remove_prefix(1);
  absl::CommandLineFlag* flag = absl::FindCommandLineFlag(rest);
  return flag != nullptr && flag->IsOfType<bool>() ? flag : nullptr;
}

std::string UnknownFlagMessage(const FlagArg& typed) {
  std::vector<std::string> candidates = OwnFlagNames();
  candidates.insert(candidates.end(), {"help", "helpfull", "version"});
  std::string message = absl::StrCat("unknown flag ", typed.dashes, typed.name);
  if (std::optional<std::string> near = NearestName(CanonicalFlagName(typed.name), candidates)) {
    absl::StrAppend(&message, "; did you mean --", SpellLike(*near, typed.name), "?");
  } else {
    absl::StrAppend(&message, " (--help lists the flags)");
  }
  return message;
}

// Checks `value` by parsing it into the flag, so that a bad one is refused
// with the flag's name as typed. Abseil parses the same values again, in the
// same order, so the flag ends as it would have.
std::optional<std::string> BadValue(absl::CommandLineFlag& flag, const FlagArg& typed,
                                    absl::string_view value) {
  std::string error;
  if (flag.ParseFrom(value, &error)) return std::nullopt;
  return absl::StrCat(typed.dashes, typed.name, ": ", error);
}

}  // namespace

PreparedCommandLine PrepareCommandLine(const std::vector<std::string>& args) {
  using Action = PreparedCommandLine::Action;
  PreparedCommandLine out;
  std::optional<std::string> help_filter, error;
  bool version = false;
  bool undefok = false;  // --undefok: Abseil decides which unknown flags pass
  for (const std::string& arg : args) {
    if (std::optional<FlagArg> f = SplitFlagArg(arg)) undefok |= f->name == "undefok";
  }
  bool terminated = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    std::optional<FlagArg> typed = i == 0 || terminated ? std::nullopt : SplitFlagArg(arg);
    if (!typed) {
      terminated |= i > 0 && arg == "--";
      out.args.push_back(arg);
      continue;
    }
    const std::string name = CanonicalFlagName(typed->name);
    if (IsHelp(name)) {
      help_filter = std::string(typed->value.value_or(""));
      continue;
    }
    if (name == "version") {
      version = true;
      continue;
    }
    if (IsAbseilUsageFlag(name)) {
      out.args.push_back(
          absl::StrCat("--", name, typed->value ? "=" : "", typed->value.value_or("")));
      continue;
    }
    if (absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name)) {
      if (typed->value) {
        if (!error) error = BadValue(*flag, *typed, *typed->value);
        out.args.push_back(absl::StrCat("--", name, "=", *typed->value));
      } else if (!flag->IsOfType<bool>() && i + 1 < args.size()) {
        // "--port 8080": the next argument is the value, whatever it looks like.
        if (!error) error = BadValue(*flag, *typed, args[i + 1]);
        out.args.push_back(absl::StrCat("--", name));
        out.args.push_back(args[++i]);
      } else {
        out.args.push_back(absl::StrCat("--", name));
      }
      continue;
    }
    if (absl::CommandLineFlag* flag = NegatedBool(name); flag != nullptr && !typed->value) {
      out.args.push_back(absl::StrCat("--no", flag->Name()));
      continue;
    }
    if (!undefok && !error) error = UnknownFlagMessage(*typed);
    out.args.push_back(
        absl::StrCat("--", name, typed->value ? "=" : "", typed->value.value_or("")));
  }
  if (help_filter) {
    out.action = Action::kHelp;
    out.text = *help_filter;
  } else if (version) {
    out.action = Action::kVersion;
  } else if (error) {
    out.action = Action::kError;
    out.text = *error;
  }
  return out;
}

std::string CommandLineHelp(const CommandLineSpec& spec, const std::string& filter) {
  std::vector<FlagDoc> docs;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (!IsOwnFlag(*flag)) continue;
    docs.push_back({std::string(name), TypeLabel(*flag), flag->DefaultValue(), flag->Help()});
  }
  std::string help = FormatFlagHelp(absl::ProgramUsageMessage(), spec.groups, docs, filter);
  absl::StrAppend(
      &help,
      "\nFlag names take dashes or underscores (--some-flag = --some_flag); --no-NAME turns a"
      "\nbool flag off. --help=WORD: only the flags whose name or description holds WORD.\n"
      "--helpfull: every flag, Abseil's own included. --version: the version and build.\n");
  return help;
}

std::vector<char*> ParseCommandLine(int argc, char** argv, const CommandLineSpec& spec) {
  std::string program = argc > 0 ? argv[0] : "kvserve";
  program = program.substr(program.rfind('/') + 1);
  PreparedCommandLine prepared = PrepareCommandLine(std::vector<std::string>(argv, argv + argc));
  switch (prepared.action) {
    case PreparedCommandLine::Action::kHelp:
      std::cout << CommandLineHelp(spec, prepared.text);
      std::exit(0);
    case PreparedCommandLine::Action::kVersion:
      std::cout << VersionLine(program, spec.version_note) << "\n";
      std::exit(0);
    case PreparedCommandLine::Action::kError:
      std::cerr << program << ": " << prepared.text << "\n";
      std::exit(kUsageError);
    case PreparedCommandLine::Action::kParse:
      break;
  }
  // Abseil keeps pointers into the array it parses: the strings live as long
  // as the process.
  static std::deque<std::string> storage;
  std::vector<char*> prepared_argv;
  for (std::string& arg : prepared.args)
    prepared_argv.push_back(storage.emplace_back(std::move(arg)).data());
  std::vector<char*> positional =
      absl::ParseCommandLine(static_cast<int>(prepared_argv.size()), prepared_argv.data());
  if (spec.max_positional >= 0 && positional.size() > size_t(spec.max_positional) + 1) {
    std::cerr << program << ": unexpected argument \"" << positional[spec.max_positional + 1]
              << "\" (" << program << " --help lists the flags)\n";
    std::exit(kUsageError);
  }
  return positional;
}

}  // namespace kvserve
