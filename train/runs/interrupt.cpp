#include "train/runs/interrupt.h"

#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "framework/write_file.h"

namespace amlp::train {

namespace {

std::atomic<int> g_signal{0};
// When the first signal came (CLOCK_MONOTONIC, ns); 0 while its handler has
// not yet noted it: a signal then is part of the same burst.
std::atomic<int64_t> g_first_ns{0};
static_assert(std::atomic<int>::is_always_lock_free, "the handler needs a lock-free flag");
static_assert(std::atomic<int64_t>::is_always_lock_free, "the handler needs a lock-free clock");

constexpr int kHandled[] = {SIGINT, SIGTERM, SIGHUP};

int64_t now_ns() {
  timespec t{};
  ::clock_gettime(CLOCK_MONOTONIC, &t);  // async-signal-safe
  return int64_t(t.tv_sec) * 1000000000 + t.tv_nsec;
}

void write_all(const char* s) {
  size_t n = std::strlen(s);
  while (n > 0) {
    const ssize_t w = ::write(STDERR_FILENO, s, n);
    if (w <= 0) return;
    s += w;
    n -= static_cast<size_t>(w);
  }
}

// The handler's lines, whole (no formatting in a handler).
const char* first_line(int sig) {
  switch (sig) {
    case SIGINT: return "train_mlp: SIGINT: no new batches; finishing the queued work (again: exit at once)\n";
    case SIGTERM: return "train_mlp: SIGTERM: no new batches; finishing the queued work (again: exit at once)\n";
    default: return "train_mlp: SIGHUP: no new batches; finishing the queued work (again: exit at once)\n";
  }
}
const char* again_line(int sig) {
  switch (sig) {
    case SIGINT: return "train_mlp: SIGINT again: exiting at once (the memory log keeps its whole rows)\n";
    case SIGTERM: return "train_mlp: SIGTERM again: exiting at once (the memory log keeps its whole rows)\n";
    default: return "train_mlp: SIGHUP again: exiting at once (the memory log keeps its whole rows)\n";
  }
}

extern "C" void on_signal(int sig) {
  const int saved_errno = errno;
  const int64_t now = now_ns();
  int expected = 0;
  if (g_signal.compare_exchange_strong(expected, sig)) {
    g_first_ns.store(now);
    write_all(first_line(sig));
    errno = saved_errno;
    return;
  }
  // timeout's pair, or the same signal sent to the process and to its group:
  // the first one's request, already being acted on.
  const int64_t first = g_first_ns.load();
  if (first == 0 || now - first < int64_t(kAgainAfter_s * 1e9)) {
    errno = saved_errno;
    return;
  }
  write_all(again_line(sig));
  remove_temporaries_in_progress();  // a --save (or summary) being written leaves no temporary behind
  ::_exit(128 + sig);
}

}  // namespace

void install_interrupt_handlers() {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  for (int sig : kHandled) sigaddset(&sa.sa_mask, sig);  // one handler at a time on a thread
  sa.sa_flags = SA_RESTART;  // the frontend's writes and waits go on; the loop reads the flag
  for (int sig : kHandled) {
    // Under nohup SIGHUP stays ignored: the run outlives the terminal, as asked.
    // SIGINT and SIGTERM are always handled (a shell script's background job
    // starts with SIGINT ignored, and `kill -INT` should still stop it).
    struct sigaction was;
    if (sig == SIGHUP && ::sigaction(sig, nullptr, &was) == 0 && was.sa_handler == SIG_IGN) continue;
    ::sigaction(sig, &sa, nullptr);
  }
}

int interrupt_signal() { return g_signal.load(std::memory_order_relaxed); }

const std::atomic<int>& interrupt_flag() { return g_signal; }

void note_interrupt(int sig) {
  int expected = 0;
  if (g_signal.compare_exchange_strong(expected, sig)) g_first_ns.store(now_ns());
}

const char* signal_name(int sig) {
  switch (sig) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    default: return "a signal";
  }
}

}  // namespace amlp::train
