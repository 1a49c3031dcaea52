// A conversation kept on the client side: each Send appends the user's turn,
// streams the model's answer through ChatStream, and appends the answer to
// the history, so the next turn sees the whole conversation. A failed turn
// leaves the history as it was; a turn the caller stopped (options.cancel)
// keeps the answer as far as it came, so that the model sees what the user
// saw (nothing came: the turn is dropped).
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "client/client.h"

namespace kvserve {

class ChatSession {
 public:
  /// `settings`: the sampling and stopping every turn uses (messages and
  /// request_id are filled per turn). `system` empty: no system message.
  ChatSession(Client &client, v1::ChatRequest settings, std::string system = "");

  StreamResult Send(const std::string &user_text,
                    const std::function<void(const StreamChunk &)> &on_chunk = {},
                    const CallOptions &options = {});
  /// Forgets every turn (the system message stays).
  void Reset();
  /// Replaces the system message, keeping the turns; empty: none.
  void SetSystem(std::string system);
  /// stopping.max_new_tokens of the next turns; nullopt: the server's default.
  void SetMaxNewTokens(std::optional<uint32_t> max_new_tokens);
  const google::protobuf::RepeatedPtrField<v1::ChatMessage> &history() const { return history_; }

 private:
  Client &client_;
  v1::ChatRequest settings_;
  std::string system_;
  google::protobuf::RepeatedPtrField<v1::ChatMessage> history_;
};

}  // namespace kvserve
