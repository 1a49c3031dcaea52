// The user's side of `kvserve-cli chat`: one message at a time, from a
// terminal (libedit line editing and history, bracketed paste) or a pipe.
//
// A message may span lines: a line ending in a backslash continues on the
// next; a line starting with """ opens a block that a line ending in """
// closes. On a terminal, pasted text (bracketed paste) stays one message,
// its newlines kept, until Enter.
#pragma once

#include <optional>
#include <string>

#include "client/ctrl_c.h"

namespace kvserve {

struct ChatInput {
  enum class Kind { kMessage, kInterrupted, kEnd };
  Kind kind = Kind::kEnd;
  std::string text;  // kMessage: the message, continuation markers removed
};

class ChatInputReader {
 public:
  /// `ctrl_c`: tells an interrupted read (Ctrl-C) from the end of input;
  /// null for a pipe.
  ChatInputReader(bool terminal, CtrlC *ctrl_c);

  /// The next message; kInterrupted when Ctrl-C dropped what was typed,
  /// kEnd at end of input (Ctrl-D on an empty line).
  ChatInput Read();

 private:
  std::optional<std::string> ReadLine(const char *prompt, bool *interrupted);

  bool terminal_;
  CtrlC *ctrl_c_;
};

}  // namespace kvserve
