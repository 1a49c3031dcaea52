#include "client/chat_commands.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace kvserve {
namespace {

ChatCommand Make(ChatCommand::Kind kind, std::string text = "") {
  ChatCommand command;
  command.kind = kind;
  command.text = std::move(text);
  return command;
}

}  // namespace

ChatCommand ParseChatCommand(absl::string_view message) {
  absl::string_view trimmed = absl::StripAsciiWhitespace(message);
  if (!absl::StartsWith(trimmed, "/"))
    return Make(ChatCommand::Kind::kMessage, std::string(trimmed));
  if (absl::StartsWith(trimmed, "//")) {
    return Make(ChatCommand::Kind::kMessage, std::string(trimmed.substr(1)));
  }
  const size_t space = trimmed.find_first_of(" \t\n");
  const absl::string_view name = trimmed.substr(0, space);
  const absl::string_view argument =
      space == absl::string_view::npos ? "" : absl::StripAsciiWhitespace(trimmed.substr(space));
  if (name == "/help" || name == "/?") return Make(ChatCommand::Kind::kHelp);
  if (name == "/exit" || name == "/quit") return Make(ChatCommand::Kind::kExit);
  if (name == "/reset") return Make(ChatCommand::Kind::kReset);
  if (name == "/system") return Make(ChatCommand::Kind::kSystem, std::string(argument));
  if (name == "/max-tokens" || name == "/max_tokens") {
    ChatCommand command = Make(ChatCommand::Kind::kMaxTokens);
    if (argument.empty() || argument == "default") return command;
    int n;
    if (!absl::SimpleAtoi(argument, &n) || n < 1) {
      return Make(ChatCommand::Kind::kError,
                  absl::StrCat("/max-tokens takes a whole number >= 1 or \"default\", got \"",
                               argument, "\""));
    }
    command.max_tokens = n;
    return command;
  }
  return Make(ChatCommand::Kind::kError,
              absl::StrCat("unknown command ", name,
                           " (/help lists them; start a message with // to send a leading /)"));
}

std::string ChatHelp() {
  return "Commands:\n"
         "  /help              this list\n"
         "  /reset             forget the conversation (the system message "
         "stays)\n"
         "  /system TEXT       replace the system message (/system alone: "
         "none)\n"
         "  /max-tokens N      cap each answer at N tokens (/max-tokens alone: "
         "the server's "
         "default)\n"
         "  /exit, /quit       leave (Ctrl-D too)\n"
         "  //TEXT             send TEXT with one leading /\n"
         "Keys: Ctrl-C stops the answer being written (what was shown is "
         "kept); at the prompt it "
         "drops the line.\n"
         "Several lines: end a line with \\ to go on, or put them between "
         "\"\"\" lines; pasted "
         "text stays one message until Enter.\n";
}

}  // namespace kvserve
