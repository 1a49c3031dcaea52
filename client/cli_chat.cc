#include "client/cli_chat.h"

#include <editline/readline.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <optional>

#include "absl/strings/ascii.h"
#include "client/chat_session.h"
#include "client/cli_output.h"

namespace kvserve {
namespace {

// Streams one answer; false when the call failed (the error is printed).
bool Answer(ChatSession& session, const std::string& text, const ChatCommandOptions& options) {
  if (!options.json) std::cout << "assistant> " << std::flush;
  StreamResult result = session.Send(
      text,
      [&](const StreamChunk& chunk) {
        if (!options.json) std::cout << Printable(chunk.response.text()) << std::flush;
      },
      options.call);
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

// One line of user input; nullopt at end of input. A terminal gets libedit's
// line editing and history; a pipe is read plainly.
std::optional<std::string> ReadLine(bool terminal) {
  if (terminal) {
    char* line = readline("you> ");
    if (line == nullptr) return std::nullopt;
    std::string text(line);
    std::free(line);
    if (!absl::StripAsciiWhitespace(text).empty()) add_history(text.c_str());
    return text;
  }
  std::string text;
  if (!std::getline(std::cin, text)) return std::nullopt;
  return text;
}

}  // namespace

int RunChatCommand(Client& client, const ChatCommandOptions& options) {
  ChatSession session(client, options.settings, options.system);
  if (!options.message.empty()) return Answer(session, options.message, options) ? 0 : 1;

  const bool terminal = isatty(STDIN_FILENO) != 0;
  if (terminal) {
    std::cout << "Chat with the model. /reset forgets the conversation, /quit (or Ctrl-D) "
                 "ends it.\n";
  }
  int failures = 0;
  while (std::optional<std::string> line = ReadLine(terminal)) {
    const std::string text(absl::StripAsciiWhitespace(*line));
    if (text.empty()) continue;
    if (text == "/quit" || text == "/exit") break;
    if (text == "/reset") {
      session.Reset();
      std::cout << "(conversation reset)\n";
      continue;
    }
    // Piped input is echoed, so the transcript shows both sides.
    if (!terminal && !options.json) std::cout << "you> " << text << "\n";
    if (!Answer(session, text, options)) ++failures;
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace kvserve
