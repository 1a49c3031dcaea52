// Shared pieces of the HTTP server's connections: the registry that lets
// shutdown reach every open connection, and the gate through which the
// engine's output thread posts to a connection's strand (closed before the
// io_context goes away, so a late output never posts into a dead context).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace kvserve::http {

class HttpConnection;

/// Holds no executor itself: what the engine keeps (a GenerationCall's
/// notify) must not own anything of the io_context, which may be gone when
/// the engine lets go of it.
class PostGate {
 public:
  /// Posts the connection's drain of its call's events, if both still exist.
  void NotifyCallEvents(const std::weak_ptr<HttpConnection>& connection);
  /// After this, nothing is posted; waits for a post in progress.
  void Close() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = false;
  }

 private:
  std::mutex mu_;
  bool open_ = true;
};

class ConnectionRegistry {
 public:
  uint64_t Add(std::weak_ptr<HttpConnection> connection);
  void Remove(uint64_t id);
  /// Asks every open connection to close (each on its own strand).
  void CloseAll();
  size_t size();

 private:
  std::mutex mu_;
  uint64_t next_id_ = 1;
  std::unordered_map<uint64_t, std::weak_ptr<HttpConnection>> connections_;
};

}  // namespace kvserve::http
