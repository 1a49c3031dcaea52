// The shared command-line parser (base/command_line.h): spellings, help,
// version, and the errors for unknown flags and bad values, against flags
// this test defines.
#include "base/command_line.h"

#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "base/flag_spelling.h"
#include "base/version.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

ABSL_FLAG(int, max_num_seqs, 64, "Sequences running at once.");
ABSL_FLAG(bool, cuda_graphs, true, "Record CUDA graphs.");
ABSL_FLAG(std::string, prompt, "", "Prompt text.");
ABSL_FLAG(std::string, log_level, "info", "debug, info, warning or error.");

namespace kvserve {
namespace {

using Action = PreparedCommandLine::Action;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

PreparedCommandLine Prepare(std::vector<std::string> args) {
  args.insert(args.begin(), "prog");
  return PrepareCommandLine(args);
}

TEST(CommandLineTest, DashesAndUnderscoresSpellTheSameFlag) {
  PreparedCommandLine p = Prepare({"--max-num-seqs=4", "-max_num_seqs", "8", "--log-level", "x"});
  EXPECT_EQ(p.action, Action::kParse) << p.text;
  EXPECT_THAT(p.args,
              ElementsAre("prog", "--max_num_seqs=4", "--max_num_seqs", "8", "--log_level", "x"));
}

TEST(CommandLineTest, ValuesPositionalsAndTheTerminatorAreUntouched) {
  // "--prompt --a-b": the value of a text flag, whatever it looks like.
  PreparedCommandLine p =
      Prepare({"--prompt", "--a-b", "model-dir", "--prompt=x-y", "--", "--not-a-flag", "-"});
  EXPECT_EQ(p.action, Action::kParse) << p.text;
  EXPECT_THAT(p.args, ElementsAre("prog", "--prompt", "--a-b", "model-dir", "--prompt=x-y", "--",
                                  "--not-a-flag", "-"));
}

TEST(CommandLineTest, NoPrefixTurnsABoolOff) {
  PreparedCommandLine p = Prepare({"--no-cuda-graphs", "--nocuda_graphs", "--cuda-graphs=false"});
  EXPECT_EQ(p.action, Action::kParse) << p.text;
  EXPECT_THAT(p.args,
              ElementsAre("prog", "--nocuda_graphs", "--nocuda_graphs", "--cuda_graphs=false"));
  // Only a bool has an "off".
  EXPECT_EQ(Prepare({"--no-prompt"}).action, Action::kError);
}

TEST(CommandLineTest, UnknownFlagNamesTheNearestInTheUsersSpelling) {
  PreparedCommandLine p = Prepare({"--max_num_seq=3"});
  EXPECT_EQ(p.action, Action::kError);
  EXPECT_EQ(p.text, "unknown flag --max_num_seq; did you mean --max_num_seqs?");
  EXPECT_EQ(Prepare({"--max-num-seq", "3"}).text,
            "unknown flag --max-num-seq; did you mean --max-num-seqs?");
  EXPECT_EQ(Prepare({"--promtp=hi"}).text, "unknown flag --promtp; did you mean --prompt?");
  EXPECT_EQ(Prepare({"--frobnicate"}).text, "unknown flag --frobnicate (--help lists the flags)");
}

TEST(CommandLineTest, BadValueNamesTheFlagAsTyped) {
  PreparedCommandLine p = Prepare({"--max-num-seqs=many"});
  EXPECT_EQ(p.action, Action::kError);
  EXPECT_THAT(p.text, HasSubstr("--max-num-seqs: "));
  EXPECT_THAT(p.text, HasSubstr("'many'"));
  EXPECT_EQ(Prepare({"--max_num_seqs", "x"}).action, Action::kError);
}

TEST(CommandLineTest, HelpAndVersionWinOverErrors) {
  PreparedCommandLine p = Prepare({"--frobnicate", "--help"});
  EXPECT_EQ(p.action, Action::kHelp);
  EXPECT_EQ(p.text, "");
  EXPECT_EQ(Prepare({"-h"}).action, Action::kHelp);
  EXPECT_EQ(Prepare({"--helpshort"}).action, Action::kHelp);
  p = Prepare({"--help=cuda"});
  EXPECT_EQ(p.action, Action::kHelp);
  EXPECT_EQ(p.text, "cuda");
  EXPECT_EQ(Prepare({"--version"}).action, Action::kVersion);
  // Abseil's own help flags pass through to Abseil.
  EXPECT_EQ(Prepare({"--helpfull"}).action, Action::kParse);
}

TEST(CommandLineTest, HelpListsOwnFlagsByGroupAndNoAbseilFlags) {
  absl::SetProgramUsageMessage("prog: a test program.");
  CommandLineSpec spec;
  spec.groups = {{"Engine", {"max_num_seqs"}}, {"Logging", {"log_*"}}};
  const std::string help = CommandLineHelp(spec, "");
  EXPECT_THAT(help, HasSubstr("prog: a test program.\n"));
  EXPECT_THAT(help, HasSubstr("\nEngine:\n  --max_num_seqs=INT (default 64)\n"
                              "      Sequences running at once.\n"));
  EXPECT_THAT(help, HasSubstr("\nLogging:\n  --log_level=TEXT (default info)\n"));
  // Flags no group names come last, under Other.
  EXPECT_THAT(help, HasSubstr("\nOther:\n  --cuda_graphs (bool, default true)\n"));
  EXPECT_LT(help.find("Logging:"), help.find("Other:"));
  EXPECT_THAT(help, Not(HasSubstr("--flagfile")));
  EXPECT_THAT(help, Not(HasSubstr("--fromenv")));
  EXPECT_THAT(help, Not(HasSubstr("No flags matched")));
  EXPECT_THAT(CommandLineHelp(spec, "CUDA"), Not(HasSubstr("--max_num_seqs")));
  EXPECT_THAT(CommandLineHelp(spec, "CUDA"), HasSubstr("--cuda_graphs"));
}

TEST(FlagHelpTest, WrapsDescriptionsAt100Columns) {
  const std::string help = FormatFlagHelp(
      "usage", {}, {{"flag", "INT", "1", std::string(60, 'a') + " " + std::string(60, 'b')}}, "");
  EXPECT_THAT(help, HasSubstr("\n      " + std::string(60, 'a') + "\n      " +
                              std::string(60, 'b') + "\n"));
}

TEST(FlagSpellingTest, SplitsFlagArguments) {
  std::optional<FlagArg> f = SplitFlagArg("--max-num-seqs=4");
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->dashes, "--");
  EXPECT_EQ(f->name, "max-num-seqs");
  EXPECT_EQ(f->value, "4");
  f = SplitFlagArg("-h");
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->name, "h");
  EXPECT_FALSE(f->value.has_value());
  EXPECT_FALSE(SplitFlagArg("model.gguf").has_value());
  EXPECT_FALSE(SplitFlagArg("-").has_value());
  EXPECT_FALSE(SplitFlagArg("--").has_value());
}

TEST(FlagSpellingTest, EditDistanceCountsASwapAsOne) {
  EXPECT_EQ(EditDistance("port", "port"), 0);
  EXPECT_EQ(EditDistance("prot", "port"), 1);
  EXPECT_EQ(EditDistance("max_num_seq", "max_num_seqs"), 1);
  EXPECT_EQ(EditDistance("", "abc"), 3);
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3);
}

TEST(FlagSpellingTest, NearestNameOnlyWhenClose) {
  const std::vector<std::string> names = {"port", "host", "http_port", "max_num_seqs"};
  EXPECT_EQ(NearestName("prot", names), "port");
  EXPECT_EQ(NearestName("max_seqs", names), std::nullopt);  // 4 edits away
  EXPECT_EQ(NearestName("zzzz", names), std::nullopt);
  EXPECT_EQ(NearestName("htp_port", names), "http_port");
}

TEST(VersionTest, LineNamesProgramVersionAndBuild) {
  EXPECT_EQ(
      VersionLine("kvserve", "CPU backend only"),
      absl::StrCat("kvserve ", SourceVersion(), " (", BuildType(), " build, CPU backend only)"));
  EXPECT_FALSE(SourceVersion().empty());
}

}  // namespace
}  // namespace kvserve
