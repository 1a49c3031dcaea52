#include "client/chat_session.h"

namespace kvserve {

ChatSession::ChatSession(Client &client, v1::ChatRequest settings, std::string system)
    : client_(client), settings_(std::move(settings)), system_(std::move(system)) {
  settings_.clear_messages();
  Reset();
}

void ChatSession::Reset() {
  history_.Clear();
  SetSystem(system_);
}

void ChatSession::SetSystem(std::string system) {
  system_ = std::move(system);
  const bool has_system = !history_.empty() && history_[0].role() == "system";
  if (system_.empty()) {
    if (has_system) history_.erase(history_.begin());
    return;
  }
  if (!has_system) {
    history_.Add();
    // The new message goes first: bubble it to the front.
    for (int i = history_.size() - 1; i > 0; --i) history_.SwapElements(i, i - 1);
  }
  history_[0].set_role("system");
  history_[0].set_content(system_);
}

void ChatSession::SetMaxNewTokens(std::optional<uint32_t> max_new_tokens) {
  if (max_new_tokens) {
    settings_.mutable_stopping()->set_max_new_tokens(*max_new_tokens);
  } else {
    settings_.mutable_stopping()->clear_max_new_tokens();
  }
}

StreamResult ChatSession::Send(const std::string &user_text,
                               const std::function<void(const StreamChunk &)> &on_chunk,
                               const CallOptions &options) {
  v1::ChatRequest request = settings_;
  *request.mutable_messages() = history_;
  v1::ChatMessage *user = request.add_messages();
  user->set_role("user");
  user->set_content(user_text);
  StreamResult result = client_.ChatStream(request, on_chunk, options);
  const bool stopped = !result.status.ok() && options.cancel != nullptr &&
                       options.cancel->cancelled() && !result.response.text().empty();
  if (result.status.ok() || stopped) {
    *history_.Add() = *user;
    v1::ChatMessage *answer = history_.Add();
    answer->set_role("assistant");
    answer->set_content(result.response.text());
  }
  return result;
}

}  // namespace kvserve
