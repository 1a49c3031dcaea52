#include "client/cli_chat.h"

#include <unistd.h>

#include <clocale>
#include <iostream>
#include <optional>

#include "absl/strings/ascii.h"
#include "client/chat_commands.h"
#include "client/chat_input.h"
#include "client/chat_session.h"
#include "client/cli_output.h"
#include "client/ctrl_c.h"

namespace kvserve {
namespace {

// Streams one answer; false when the call failed (the error is printed). With
// `ctrl_c`, Ctrl-C stops the answer: not a failure.
bool Answer(ChatSession &session, const std::string &text, const ChatCommandOptions &options,
            CtrlC *ctrl_c) {
  if (!options.json) std::cout << "assistant> " << std::flush;
  CancellationToken stop;
  CallOptions call = options.call;
  if (ctrl_c != nullptr) {
    call.cancel = &stop;
    ctrl_c->Arm(&stop);
  }
  StreamResult result = session.Send(
      text,
      [&](const StreamChunk &chunk) {
        if (!options.json) std::cout << Printable(chunk.response.text()) << std::flush;
      },
      call);
  if (ctrl_c != nullptr) {
    ctrl_c->Disarm();
    ctrl_c->TakePressed();  // a press that stopped this answer is not for the prompt
  }
  if (!result.status.ok() && stop.cancelled()) {
    std::cout << (result.response.text().empty()
                      ? "\n(stopped; nothing came, the turn is dropped)\n"
                      : "\n(stopped; the answer so far is kept in the "
                        "conversation)\n")
              << std::flush;
    return true;
  }
  if (!result.status.ok()) {
    if (!options.json) std::cout << "\n";
    std::cerr << "kvserve-cli: " << absl::StatusCodeToString(ToAbslStatus(result.status).code())
              << ": " << result.status.error_message() << "\n";
    return false;
  }
  if (options.json) {
    std::cout << ResultJson(result).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
              << "\n";
  } else {
    std::cout << "\n(" << SpeedLine(result) << ")\n";
  }
  return true;
}

// Runs a slash command; false for /exit.
bool RunCommand(const ChatCommand &command, ChatSession &session) {
  switch (command.kind) {
    case ChatCommand::Kind::kHelp:
      std::cout << ChatHelp();
      break;
    case ChatCommand::Kind::kReset:
      session.Reset();
      std::cout << "(conversation reset)\n";
      break;
    case ChatCommand::Kind::kSystem:
      session.SetSystem(command.text);
      std::cout << (command.text.empty() ? "(no system message)\n" : "(system message set)\n");
      break;
    case ChatCommand::Kind::kMaxTokens:
      session.SetMaxNewTokens(command.max_tokens);
      if (command.max_tokens) {
        std::cout << "(answers capped at " << *command.max_tokens << " tokens)\n";
      } else {
        std::cout << "(answers capped by the server's default)\n";
      }
      break;
    case ChatCommand::Kind::kError:
      std::cerr << "kvserve-cli: " << command.text << "\n";
      break;
    case ChatCommand::Kind::kExit:
      return false;
    case ChatCommand::Kind::kMessage:
      break;
  }
  return true;
}

}  // namespace

int RunChatCommand(Client &client, const ChatCommandOptions &options) {
  ChatSession session(client, options.settings, options.system);
  if (!options.message.empty()) return Answer(session, options.message, options, nullptr) ? 0 : 1;

  const bool terminal = isatty(STDIN_FILENO) != 0;
  std::optional<CtrlC> ctrl_c;
  if (terminal) {
    // Multibyte input for libedit (LC_CTYPE only: numbers print as before).
    std::setlocale(LC_CTYPE, "");
    ctrl_c.emplace();
    std::cout << "Chat with the model. /help lists commands; Ctrl-C stops an "
                 "answer; Ctrl-D or "
                 "/exit quits.\n";
  }
  ChatInputReader reader(terminal, ctrl_c ? &*ctrl_c : nullptr);
  int failures = 0;
  for (;;) {
    ChatInput input = reader.Read();
    if (input.kind == ChatInput::Kind::kEnd) {
      // Ctrl-D: the shell's prompt goes on a line of its own.
      if (terminal) std::cout << "\n";
      break;
    }
    if (input.kind == ChatInput::Kind::kInterrupted) {
      std::cout << "\n(Ctrl-D or /exit quits)\n";
      continue;
    }
    if (absl::StripAsciiWhitespace(input.text).empty()) continue;
    const ChatCommand command = ParseChatCommand(input.text);
    if (command.kind != ChatCommand::Kind::kMessage) {
      if (!RunCommand(command, session)) break;
      continue;
    }
    // Piped input is echoed, so the transcript shows both sides.
    if (!terminal && !options.json) std::cout << "you> " << command.text << "\n";
    if (!Answer(session, command.text, options, ctrl_c ? &*ctrl_c : nullptr)) ++failures;
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace kvserve
