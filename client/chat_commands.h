// Slash commands of the interactive `kvserve-cli chat`: what a typed line
// means before anything is sent to the model.
#pragma once

#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace kvserve {

struct ChatCommand {
  enum class Kind {
    kMessage,    // not a command: send `text` to the model
    kHelp,       // /help
    kReset,      // /reset
    kSystem,     // /system [TEXT]: `text` replaces the system message (empty: none)
    kMaxTokens,  // /max-tokens [N]: `max_tokens`, nullopt for the server's
                 // default
    kExit,       // /exit, /quit
    kError,      // `text` says what is wrong; nothing is sent
  };
  Kind kind = Kind::kMessage;
  std::string text;
  std::optional<int> max_tokens;
};

/// The message with surrounding whitespace trimmed, or a command: one
/// starting with "/" is a command; "//" sends the rest with one "/"
/// (a message that starts with a slash). Unknown commands are kError.
ChatCommand ParseChatCommand(absl::string_view message);

/// The /help text: commands, keys and multi-line input.
std::string ChatHelp();

}  // namespace kvserve
