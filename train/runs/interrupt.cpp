#include "train/runs/interrupt.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

namespace amlp::train {

namespace {

std::atomic<int> g_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "the handler needs a lock-free flag");

void write_all(const char* s) {
  size_t n = std::strlen(s);
  while (n > 0) {
    const ssize_t w = ::write(STDERR_FILENO, s, n);
    if (w <= 0) return;
    s += w;
    n -= static_cast<size_t>(w);
  }
}

extern "C" void on_signal(int sig) {
  const int saved_errno = errno;
  int expected = 0;
  if (g_signal.compare_exchange_strong(expected, sig)) {
    write_all(sig == SIGINT ? "train_mlp: SIGINT: no new batches; finishing the queued work (again: exit at once)\n"
                            : "train_mlp: SIGTERM: no new batches; finishing the queued work (again: exit at once)\n");
    errno = saved_errno;
    return;
  }
  write_all(sig == SIGINT ? "train_mlp: SIGINT again: exiting at once (the memory log keeps its whole rows)\n"
                          : "train_mlp: SIGTERM again: exiting at once (the memory log keeps its whole rows)\n");
  ::_exit(128 + sig);
}

}  // namespace

void install_interrupt_handlers() {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;  // the frontend's writes and waits go on; the loop reads the flag
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
}

int interrupt_signal() { return g_signal.load(std::memory_order_relaxed); }

void note_interrupt(int sig) {
  int expected = 0;
  g_signal.compare_exchange_strong(expected, sig);
}

const char* signal_name(int sig) {
  switch (sig) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    default: return "a signal";
  }
}

}  // namespace amlp::train
