// step_capture.cpp — step graphs between the ops and their queue (step_capture.h).
#include "framework/core/graph/step_capture.h"

#include <algorithm>

#include "framework/core/memory/memory.h"
#include "framework/error.h"
#include "framework/trace.h"

namespace amlp {

namespace {

QueuedOp step_marker(uint64_t step, StepVerdict v, int slot) {
  return QueuedOp{"(step)", step, nullptr, {}, {}, OpRole::StepEnd, v, slot};
}

}  // namespace

// --- frontend ---------------------------------------------------------------------------

void StepCapture::set(int warmup) {
  recogniser_ = warmup > 0 ? std::make_unique<StepRecogniser>(warmup) : nullptr;
  held_in_step_ = 0;
  in_step_ = false;
  on_.store(warmup > 0, std::memory_order_release);
}

StepGraphStats StepCapture::stats() const {
  StepGraphStats s = recogniser_ ? recogniser_->stats() : StepGraphStats{};
  std::lock_guard<std::mutex> lk(fail_mu_);
  s.capture_failures = failures_;
  const uint64_t again = std::min(rerecorded_, s.replayed);
  s.replayed -= again, s.updated += again;
  if (failed_.load()) s.last_reason = failure_;  // not yet seen by the recogniser
  return s;
}

void StepCapture::take_failure() {
  if (!failed_.exchange(false) || !recogniser_) return;
  std::string why;
  {
    std::lock_guard<std::mutex> lk(fail_mu_);
    why = failure_;
  }
  recogniser_->interrupt(why);
}

bool StepCapture::hold(const char* name, const OpBuffers& bufs) {
  if (!recogniser_) return false;
  take_failure();
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
  sig.scalars.assign(bufs.scalars.begin(), bufs.scalars.end());
  const bool held = recogniser_->op(sig);
  held_in_step_ += held;
  return held;
}

StepVerdict StepCapture::end(QueuedOp& marker, bool& queue_marker) {
  in_step_ = false;
  queue_marker = false;
  if (!recogniser_) return StepVerdict::Eager;
  take_failure();
  const bool held = held_in_step_ > 0;
  held_in_step_ = 0;
  const StepVerdict v = recogniser_->end_step();
  if (held) {  // the marker's seq carries the step's number (the loop's batch)
    marker = step_marker(recogniser_->stats().steps, v, recogniser_->slot());
    queue_marker = true;
  }
  return v;
}

bool StepCapture::release(const char* why, QueuedOp& marker) {
  if (!recogniser_ || !held_in_step_) return false;
  held_in_step_ = 0;
  recogniser_->interrupt(why);
  marker = step_marker(0, StepVerdict::Eager, 0);
  return true;
}

// --- worker -----------------------------------------------------------------------------

void StepCapture::note_failure(std::string reason) noexcept {
  std::lock_guard<std::mutex> lk(fail_mu_);
  failures_++;
  failure_.swap(reason);
  failed_ = true;
}

void StepCapture::run_step(StepVerdict v, int slot, uint64_t step, StepHost& host) {
  std::vector<QueuedOp> ops;
  ops.swap(held_);
  if (ops.empty()) return;
  bool declared = true;
  for (const QueuedOp& op : ops) declared = declared && op.bufs.scalars_declared;
  // A kernel whose scalars were not declared may differ from the recorded one.
  if (v == StepVerdict::Replay && !declared) {
    v = StepVerdict::Update;
    std::lock_guard<std::mutex> lk(fail_mu_);
    rerecorded_++;  // counted as what it was
  }
  if (v != StepVerdict::Eager && sync_ && launch_as_graph(ops, v, slot, step, host)) return;
  // No device graph: the ops run one by one. A replay runs the kernels the
  // slot recorded (as a device graph keeps its launches' arguments), with
  // this step's buffers, which are the recorded ones (step_graph.h).
  std::vector<BoundKernel>& rec = recorded_[slot];
  if (v == StepVerdict::Capture || v == StepVerdict::Update) {
    rec.clear();
    for (const QueuedOp& op : ops) rec.push_back(op.kernel);
  } else if (v == StepVerdict::Replay && rec.size() == ops.size()) {
    for (size_t i = 0; i < ops.size(); ++i) ops[i].kernel = rec[i];
  } else {
    for (std::vector<BoundKernel>& r : recorded_) r.clear();
  }
  for (QueuedOp& op : ops) host.execute_and_announce(op);
}

// The held ops' launches recorded into `slot`'s graph, and launched. False:
// nothing of the step ran (the queue's kept error is as before); they run
// one by one. (The worker's busy time covers it all: worker_clock.h.)
bool StepCapture::record(std::vector<QueuedOp>& ops, int slot, StepHost& host) {
  // Blocks are taken before the recording (a fresh one may need the
  // device's allocator, which a stream being recorded must not call).
  try {
    for (QueuedOp& op : ops) host.allocate_outputs(op);
  } catch (const std::exception&) {
    return false;  // run one by one: the op that cannot get its block reports it
  }
  const std::exception_ptr kept_before = host.kept_error();
  if (!sync_->capture_begin(slot)) return false;
  for (QueuedOp& op : ops) host.run(op);  // launches recorded, not run
  std::string failure;
  try {
    sync_->capture_end(slot, ops.back().seq);
  } catch (const std::exception& e) {
    failure = e.what();
  } catch (...) {
    failure = "unknown exception";
  }
  if (failure.empty()) return true;
  // The graph never ran: what the recording set (an error kept for a
  // blocker, outputs marked written) is undone by running the ops one by
  // one, in order, each failure then named by its own op.
  sync_->drop_graph();
  host.restore_error(kept_before);
  note_failure(detail::concat("a recorded step failed on ", name_, ": recording its ", ops.size(), " ops: ", failure,
                              " (they ran one by one)"));
  return false;
}

// The held ops as one graph: recorded and launched (Capture, Update), or the
// recorded graph launched again (Replay). False: run them one by one instead
// (the backend has no graphs, an op waits on another queue, an input carries
// an earlier failure, the step was dropped, the recording or replay failed).
bool StepCapture::launch_as_graph(std::vector<QueuedOp>& ops, StepVerdict v, int slot, uint64_t step,
                                StepHost& host) {
  for (const QueuedOp& op : ops) {
    if (op.bufs.traits.collective) return false;  // joins other queues' ops: launched op by op
    if (!op.deps.empty() || host.dropped(op.seq)) return false;
    for (size_t i = 0; i < op.bufs.reads; ++i)
      if (const auto& r = op.bufs.refs[i]; r && (r->failed() || !r->allocated())) return false;
  }
  const uint64_t last = ops.back().seq;
  const uint64_t t0 = trace::enabled() ? trace::now_us() : 0;
  if (v == StepVerdict::Replay) {
    for (const QueuedOp& op : ops)  // every output has the block it was recorded with
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
      note_failure(detail::concat("a recorded step failed on ", name_, ": replaying its ", ops.size(), " ops: ",
                                  failure, " (they ran one by one)"));
      return false;
    }
    } else if (!record(ops, slot, host)) {
    return false;
  }
  // Launched as one graph: a device fault found later may be any of its ops (fault_note).
  graph_step_.store(0, std::memory_order_relaxed);
  graph_first_.store(ops.front().seq, std::memory_order_relaxed);
  graph_last_.store(last, std::memory_order_relaxed);
  graph_step_.store(step, std::memory_order_release);
  if (t0) {
    try {
      trace::span(track_, v == StepVerdict::Replay ? "graph replay" : "graph capture", t0, trace::now_us(), last);
    } catch (...) {  // a full trace buffer loses a span, never the step
    }
  }
  for (QueuedOp& op : ops) {
    if (v == StepVerdict::Replay)
      for (size_t i = op.bufs.reads; i < op.bufs.refs.size(); ++i)
        if (const auto& r = op.bufs.refs[i]) r->write_succeeded();  // written, as by a run
    host.finish_and_announce(op);
  }
  return true;
}

// --- any thread ---------------------------------------------------------------------------

std::string StepCapture::fault_note(uint64_t seq) const {
  const uint64_t step = graph_step_.load(std::memory_order_acquire);
  const uint64_t first = graph_first_.load(std::memory_order_relaxed), last = graph_last_.load(std::memory_order_relaxed);
  if (!step || seq < first) return {};
  return detail::concat(" [ops #", first, "-#", last, " ran as one step graph: step ", step,
                        " since step graphs were turned on (the loop's batch); the fault may be in any of them, "
                        "and without step graphs (--graph off) the op that faulted is named]");
}

}  // namespace amlp
