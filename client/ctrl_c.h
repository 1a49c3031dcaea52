// Ctrl-C in the interactive chat: stop the reply, not the program.
#pragma once

#include <atomic>
#include <mutex>
#include <thread>

#include "client/client.h"

namespace kvserve {

/// While alive, SIGINT no longer ends the process: it cancels the call armed
/// with Arm (the reply streaming now) and is remembered for the prompt, whose
/// read it interrupts (EINTR: the handler is installed without SA_RESTART).
/// One at a time per process.
class CtrlC {
 public:
  CtrlC();
  ~CtrlC();
  CtrlC(const CtrlC &) = delete;
  CtrlC &operator=(const CtrlC &) = delete;

  /// Whether Ctrl-C was pressed since the last TakePressed; clears it.
  bool TakePressed();
  /// The same, without clearing it (safe in a read loop that sees EINTR).
  static bool Pressed();
  /// Ctrl-C cancels `token` until Disarm (a press before Arm is dropped).
  void Arm(CancellationToken *token);
  void Disarm();

 private:
  // The handler may only write to a pipe; this thread turns the byte into a
  // Cancel, which takes a mutex.
  void Watch();

  int pipe_[2] = {-1, -1};
  std::thread watcher_;
  std::mutex mu_;
  CancellationToken *armed_ = nullptr;
};

}  // namespace kvserve
