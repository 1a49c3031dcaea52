// `kvserve-cli chat`: one question (--message) or an interactive
// conversation with history, line editing when stdin is a terminal.
#pragma once

#include <string>

#include "client/client.h"

namespace kvserve {

struct ChatCommandOptions {
  std::string message;  // one-shot when not empty
  std::string system;   // system message, when not empty
  bool json = false;    // one JSON object per answer instead of streamed text
  v1::ChatRequest settings;  // sampling and stopping for every turn
  CallOptions call;
};

int RunChatCommand(Client& client, const ChatCommandOptions& options);

}  // namespace kvserve
