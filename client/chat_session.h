// A conversation kept on the client side: each Send appends the user's turn,
// streams the model's answer through ChatStream, and appends the answer to
// the history, so the next turn sees the whole conversation. A failed or
// cancelled turn leaves the history as it was.
#pragma once

#include <functional>
#include <string>

#include "client/client.h"

namespace kvserve {

class ChatSession {
 public:
  /// `settings`: the sampling and stopping every turn uses (messages and
  /// request_id are filled per turn). `system` empty: no system message.
  ChatSession(Client& client, v1::ChatRequest settings, std::string system = "");

  StreamResult Send(const std::string& user_text,
                    const std::function<void(const StreamChunk&)>& on_chunk = {},
                    const CallOptions& options = {});
  /// Forgets every turn (the system message stays).
  void Reset();
  const google::protobuf::RepeatedPtrField<v1::ChatMessage>& history() const {
    return history_;
  }

 private:
  Client& client_;
  v1::ChatRequest settings_;
  std::string system_;
  google::protobuf::RepeatedPtrField<v1::ChatMessage> history_;
};

}  // namespace kvserve
