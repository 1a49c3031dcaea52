#include "client/chat_session.h"

namespace kvserve {

ChatSession::ChatSession(Client& client, v1::ChatRequest settings, std::string system)
    : client_(client), settings_(std::move(settings)), system_(std::move(system)) {
  settings_.clear_messages();
  Reset();
}

void ChatSession::Reset() {
  history_.Clear();
  if (!system_.empty()) {
    v1::ChatMessage* message = history_.Add();
    message->set_role("system");
    message->set_content(system_);
  }
}

StreamResult ChatSession::Send(const std::string& user_text,
                               const std::function<void(const StreamChunk&)>& on_chunk,
                               const CallOptions& options) {
  v1::ChatRequest request = settings_;
  *request.mutable_messages() = history_;
  v1::ChatMessage* user = request.add_messages();
  user->set_role("user");
  user->set_content(user_text);
  StreamResult result = client_.ChatStream(request, on_chunk, options);
  if (result.status.ok()) {
    *history_.Add() = *user;
    v1::ChatMessage* answer = history_.Add();
    answer->set_role("assistant");
    answer->set_content(result.response.text());
  }
  return result;
}

}  // namespace kvserve
