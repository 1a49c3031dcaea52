// Shared pieces of the HTTP server's connections: the registry that lets
// shutdown reach every open connection, and the gate through which the
// engine's output thread posts to a connection's strand (closed before the
// io_context goes away, so a late output never posts into a dead context).
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/post.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace kvserve::http {

class HttpConnection;

class PostGate {
 public:
  void Post(const boost::asio::any_io_executor& executor, std::function<void()> fn) {
    std::lock_guard<std::mutex> lock(mu_);
    if (open_) boost::asio::post(executor, std::move(fn));
  }
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
