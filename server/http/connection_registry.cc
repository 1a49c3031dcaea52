#include "server/http/connection_registry.h"

#include <vector>

#include "server/http/http_connection.h"

namespace kvserve::http {

void PostGate::NotifyCallEvents(const std::weak_ptr<HttpConnection>& connection) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!open_) return;
  if (auto c = connection.lock()) c->PostCallEvents();
}

uint64_t ConnectionRegistry::Add(std::weak_ptr<HttpConnection> connection) {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t id = next_id_++;
  connections_.emplace(id, std::move(connection));
  return id;
}

void ConnectionRegistry::Remove(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  connections_.erase(id);
}

void ConnectionRegistry::CloseAll() {
  std::vector<std::shared_ptr<HttpConnection>> open;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [id, weak] : connections_) {
      if (auto connection = weak.lock()) open.push_back(std::move(connection));
    }
  }
  // Outside the lock: a connection released here removes itself.
  for (auto& connection : open) connection->Close();
}

size_t ConnectionRegistry::size() {
  std::lock_guard<std::mutex> lock(mu_);
  return connections_.size();
}

}  // namespace kvserve::http
