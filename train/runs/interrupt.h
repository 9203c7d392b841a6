// interrupt.h — SIGINT, SIGTERM and SIGHUP for train_mlp (docs/design.md §8).
//
// The first signal only sets a flag: the training loop stops queueing new
// batches (host work in progress returns at once: it polls the flag), the
// queues finish what was queued, the driver writes every output marked
// interrupted and exits 128 + the signal (130, 143, 129). A second signal
// exits at once (_exit), after one line on stderr — but only one that comes
// kAgainAfter_s or more after the first: GNU timeout signals the child and
// then its whole process group, and a terminal's hang-up reaches every
// process of the session, so one request may arrive as two signals within
// microseconds; those count once. The memory log keeps its whole rows (each
// is written with one write(2) and flushed). SIGHUP ignored when the
// program starts (nohup) stays ignored.
// (SIGPIPE is ignored from the start: train/runs/checked_output.h.) The
// handler calls only async-signal-safe functions:
// clock_gettime, atomic loads, stores and exchanges, write(2), _exit.
//
//   install_interrupt_handlers();            // train_mlp's main, before the run
//   if (interrupt_signal()) ...              // the loop, once per batch
//   do_host_work(w, &interrupt_flag());      // returns early once a signal came
#pragma once
#include <atomic>

namespace amlp::train {

// A second signal sooner than this after the first is the same request.
constexpr double kAgainAfter_s = 0.5;

void install_interrupt_handlers();
// 0 until the first SIGINT, SIGTERM or SIGHUP arrives; then that signal's number.
int interrupt_signal();
// The flag interrupt_signal() reads, for a wait that polls it (host work).
const std::atomic<int>& interrupt_flag();
// Sets interrupt_signal() to `sig` unless a signal came already: another
// rank's interrupt, agreed across processes, stops this one alike.
void note_interrupt(int sig);
// "SIGINT", "SIGTERM", "SIGHUP" (or "a signal").
const char* signal_name(int sig);

}  // namespace amlp::train
