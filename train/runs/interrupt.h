// interrupt.h — SIGINT/SIGTERM for train_mlp (docs/design.md §8).
//
// The first signal only sets a flag: the training loop stops queueing new
// batches, the queues finish what was queued, the driver writes every output
// marked interrupted and exits 128 + the signal (130, 143). A second signal
// exits at once (_exit), after one line on stderr; the memory log keeps its
// whole rows (each is written with one write(2) and flushed). The handler
// calls only async-signal-safe functions: an atomic exchange, write(2), _exit.
//
//   install_interrupt_handlers();            // train_mlp's main, before the run
//   if (interrupt_signal()) ...              // the loop, once per batch
#pragma once

namespace amlp::train {

void install_interrupt_handlers();
// 0 until the first SIGINT or SIGTERM arrives; then that signal's number.
int interrupt_signal();
// Sets interrupt_signal() to `sig` unless a signal came already: another
// rank's interrupt, agreed across processes, stops this one alike.
void note_interrupt(int sig);
// "SIGINT", "SIGTERM" (or "signal N").
const char* signal_name(int sig);

}  // namespace amlp::train
