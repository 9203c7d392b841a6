// queue_step.cpp — step graphs on a queue (queue.h set_step_graph, step_graph.h).
//
// Frontend: each push inside a step is shown to the recogniser; an op it
// holds is queued as Held, and end_step() queues a StepEnd marker carrying
// the verdict. Worker: held ops wait in held_ until the marker (or an op that
// is not held, which ends the step's holding) and then either run one by one
// or are launched as one graph by the backend (StreamSync::capture_begin /
// capture_end / replay). A backend without graphs (the CPU) runs them one by
// one: the same kernels in the same order, so results never depend on it.
#include <algorithm>
#include <chrono>
#include <cstring>

#include "framework/core/memory.h"
#include "framework/core/queue.h"
#include "framework/error.h"
#include "framework/trace.h"

namespace amlp {

void Queue::set_step_graph(int warmup) {
  std::lock_guard<std::mutex> lk(mu_);
  release_step_locked("step graphs turned off");  // nothing stays held
  steps_ = warmup > 0 ? std::make_unique<StepRecogniser>(warmup) : nullptr;
  steps_on_.store(warmup > 0, std::memory_order_release);
}

StepGraphStats Queue::step_graph_stats() const {
  std::lock_guard<std::mutex> lk(mu_);
  StepGraphStats s = steps_ ? steps_->stats() : StepGraphStats{};
  s.capture_failures = graph_failures_;
  const uint64_t again = std::min(rerecorded_, s.replayed);
  s.replayed -= again, s.updated += again;
  if (graph_failed_.load()) s.last_reason = graph_failure_;  // not yet seen by the frontend
  return s;
}

void Queue::note_graph_failure(std::string reason) noexcept {
  std::lock_guard<std::mutex> lk(mu_);
  graph_failures_++;
  graph_failure_.swap(reason);
  graph_failed_ = true;
}

void Queue::take_graph_failure_locked() {
  if (graph_failed_.exchange(false) && steps_) steps_->interrupt(graph_failure_);
}

bool Queue::hold_locked(const char* name, const OpBuffers& bufs) {
  take_graph_failure_locked();
  if (blocking_ || max_ops_ || max_bytes_) {  // a held op could keep a bound from ever freeing
    release_step_locked("back-pressure or synchronous mode inside the step");
    return false;
  }
  OpSignature sig;
  sig.name = name;
  sig.traits = bufs.traits;
  sig.payload = bufs.payload.data != nullptr;
  sig.bytes.reserve(bufs.refs.size());
  sig.addresses.reserve(bufs.refs.size());
  for (const auto& r : bufs.refs) {
    sig.bytes.push_back(r ? r->bytes() : 0);
    sig.addresses.push_back(r ? r->data() : nullptr);
  }
  sig.scalars = bufs.scalars;
  return steps_->op(sig);
}

void Queue::release_step_locked(const char* why) {
  if (!steps_ || !held_in_step_) return;
  held_in_step_ = 0;
  steps_->interrupt(why);
  pending_.push_back(Op{"(step)", 0, nullptr, {}, {}, Role::StepEnd, StepVerdict::Eager});
  work_cv_.notify_one();
}

void Queue::begin_step() {
  std::lock_guard<std::mutex> lk(mu_);
  in_step_ = steps_ != nullptr;
}

StepVerdict Queue::end_step() {
  StepVerdict v = StepVerdict::Eager;
  bool wake = false;
  {
    std::lock_guard<std::mutex> lk(mu_);
    in_step_ = false;
    if (!steps_) return v;
    take_graph_failure_locked();
    const bool held = held_in_step_ > 0;
    held_in_step_ = 0;
    v = steps_->end_step();
    if (held) {  // the marker's seq carries the step's number (1, 2, ...: the loop's batch)
      pending_.push_back(Op{"(step)", steps_->stats().steps, nullptr, {}, {}, Role::StepEnd, v, steps_->slot()});
      wake = worker_sleeping_ && !paused_;
    }
  }
  if (wake) work_cv_.notify_one();
  return v;
}

void Queue::run_step(StepVerdict v, int slot, uint64_t step) {
  std::vector<Op> ops;
  ops.swap(held_);
  if (ops.empty()) return;
  bool declared = true;
  for (const Op& op : ops) declared = declared && op.bufs.scalars_declared;
  // A closure whose scalars were not declared may differ from the recorded one.
  if (v == StepVerdict::Replay && !declared) {
    v = StepVerdict::Update;
    std::lock_guard<std::mutex> lk(mu_);
    rerecorded_++;  // counted as what it was
  }
  if (v != StepVerdict::Eager && sync_ && launch_held_as_graph(ops, v, slot, step)) return;
  // No device graph: the ops run one by one. A replay runs the kernels the
  // slot recorded (as a device graph keeps its launches' arguments), with
  // this step's buffers, which are the recorded ones (step_graph.h).
  std::vector<Kernel>& rec = recorded_[slot];
  if (v == StepVerdict::Capture || v == StepVerdict::Update) {
    rec.clear();
    for (const Op& op : ops) rec.push_back(op.kernel);
  } else if (v == StepVerdict::Replay && rec.size() == ops.size()) {
    for (size_t i = 0; i < ops.size(); ++i) ops[i].kernel = rec[i];
  } else {
    for (std::vector<Kernel>& r : recorded_) r.clear();
  }
  for (Op& op : ops) {
    const BacklogBytes freed = execute(op);
    std::lock_guard<std::mutex> lk(mu_);
    announce_locked(op.seq, freed);
  }
}

// The held ops as one graph: recorded and launched (Capture, Update), or the
// recorded graph launched again (Replay). False: run them one by one instead
// (the backend has no graphs, an op waits on another queue, an input carries
// an earlier failure, the step was dropped).
bool Queue::launch_held_as_graph(std::vector<Op>& ops, StepVerdict v, int slot, uint64_t step) {
  for (const Op& op : ops) {
    if (op.bufs.traits.collective) return false;  // joins other queues' ops: launched op by op
    if (!op.deps.empty() || op.seq <= drop_upto_.load(std::memory_order_acquire)) return false;
    for (size_t i = 0; i < op.bufs.reads; ++i)
      if (const auto& r = op.bufs.refs[i]; r && (r->error || !r->allocated())) return false;
  }
  const uint64_t last = ops.back().seq;
  const uint64_t t0 = trace::enabled() ? trace::now_us() : 0;
  const auto k0 = std::chrono::steady_clock::now();
  if (v == StepVerdict::Replay) {
    for (const Op& op : ops)  // every output has the block it was recorded with
      for (size_t i = op.bufs.reads; i < op.bufs.refs.size(); ++i)
        if (const auto& r = op.bufs.refs[i]; r && !r->allocated()) return false;
    std::string failure;
    try {
      if (!sync_->replay(slot, last)) return false;
    } catch (const std::exception& e) {
      failure = e.what();
    } catch (...) {
      failure = "unknown exception";
    }
    if (!failure.empty()) {  // nothing of the step ran: the ops run one by one and report
      sync_->drop_graph();
      note_graph_failure(detail::concat("a recorded step failed on ", name_, ": replaying its ", ops.size(),
                                        " ops: ", failure, " (they ran one by one)"));
      return false;
    }
  } else {
    // Blocks are taken before the recording (a fresh one may need the
    // device's allocator, which a stream being recorded must not call).
    try {
      for (Op& op : ops) allocate_outputs(op);
    } catch (const std::exception&) {
      return false;  // run one by one: the op that cannot get its block reports it
    }
    std::exception_ptr kept_before;
    {
      std::lock_guard<std::mutex> lk(mu_);
      kept_before = error_;
    }
    if (!sync_->capture_begin(slot)) return false;
    for (Op& op : ops) run(op);  // launches recorded, not run
    std::string failure;
    try {
      sync_->capture_end(slot, last);
    } catch (const std::exception& e) {
      failure = e.what();
    } catch (...) {
      failure = "unknown exception";
    }
    if (!failure.empty()) {
      // The graph never ran: what the recording set (an error kept for a
      // blocker, outputs marked written) is undone by running the ops one
      // by one, in order, each failure then named by its own op.
      sync_->drop_graph();
      {
        std::lock_guard<std::mutex> lk(mu_);
        error_ = kept_before;
      }
      note_graph_failure(detail::concat("a recorded step failed on ", name_, ": recording its ", ops.size(),
                                        " ops: ", failure, " (they ran one by one)"));
      return false;
    }
  }
  busy_ns_.fetch_add(static_cast<uint64_t>(
                         std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - k0)
                             .count()),
                     std::memory_order_relaxed);
  // Launched as one graph: a device fault found later may be any of its ops (exposed_fault says so).
  graph_step_.store(0, std::memory_order_relaxed);
  graph_first_.store(ops.front().seq, std::memory_order_relaxed);
  graph_last_.store(last, std::memory_order_relaxed);
  graph_step_.store(step, std::memory_order_release);
  if (t0) {
    try {
      trace::span(track_, v == StepVerdict::Replay ? "graph replay" : "graph capture", t0, trace::now_us(), last);
    } catch (...) {
    }
  }
  for (Op& op : ops) {
    if (v == StepVerdict::Replay)
      for (size_t i = op.bufs.reads; i < op.bufs.refs.size(); ++i)
        if (const auto& r = op.bufs.refs[i]) r->error = nullptr;  // written, as by a run
    const BacklogBytes freed = finish(op);
    std::lock_guard<std::mutex> lk(mu_);
    announce_locked(op.seq, freed);
  }
  return true;
}

}  // namespace amlp
