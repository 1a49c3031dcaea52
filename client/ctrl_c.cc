#include "client/ctrl_c.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>

namespace kvserve {
namespace {

volatile sig_atomic_t g_pressed = 0;
int g_write_fd = -1;
struct sigaction g_previous;

constexpr char kPress = 'c';
constexpr char kQuit = 'q';

void OnSigint(int) {
  const int saved = errno;
  g_pressed = 1;
  if (g_write_fd >= 0) {
    [[maybe_unused]] ssize_t n = write(g_write_fd, &kPress, 1);
  }
  errno = saved;
}

}  // namespace

CtrlC::CtrlC() {
  if (pipe2(pipe_, O_CLOEXEC) != 0) return;  // Ctrl-C then ends the program, as before
  g_write_fd = pipe_[1];
  g_pressed = 0;
  watcher_ = std::thread([this] { Watch(); });
  struct sigaction action = {};
  action.sa_handler = OnSigint;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;  // no SA_RESTART: a press interrupts the prompt's read
  sigaction(SIGINT, &action, &g_previous);
}

CtrlC::~CtrlC() {
  if (pipe_[1] < 0) return;
  sigaction(SIGINT, &g_previous, nullptr);
  g_write_fd = -1;
  [[maybe_unused]] ssize_t n = write(pipe_[1], &kQuit, 1);
  watcher_.join();
  close(pipe_[0]);
  close(pipe_[1]);
}

void CtrlC::Watch() {
  // The handler runs on the thread the kernel picks; keep it off this one.
  sigset_t block;
  sigemptyset(&block);
  sigaddset(&block, SIGINT);
  pthread_sigmask(SIG_BLOCK, &block, nullptr);
  for (;;) {
    char c;
    const ssize_t n = read(pipe_[0], &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n != 1 || c == kQuit) return;
    std::lock_guard<std::mutex> lock(mu_);
    if (armed_ != nullptr) armed_->Cancel();
  }
}

bool CtrlC::Pressed() { return g_pressed != 0; }

bool CtrlC::TakePressed() {
  const bool pressed = g_pressed != 0;
  g_pressed = 0;
  return pressed;
}

void CtrlC::Arm(CancellationToken *token) {
  std::lock_guard<std::mutex> lock(mu_);
  g_pressed = 0;
  armed_ = token;
}

void CtrlC::Disarm() {
  std::lock_guard<std::mutex> lock(mu_);
  armed_ = nullptr;
}

}  // namespace kvserve
