// run_op.cpp — how the worker runs one op (queue.h): the parts an op meets in
// order (dropped, waiting for other queues, its inputs, its outputs, the
// launch between the device's per-op hooks), then finishing it. Each part
// is skipped when it has nothing to do; none of them touches the queue's lock.
#include <exception>

#include "framework/core/memory/memory.h"
#include "framework/core/queue/queue.h"
#include "framework/error.h"
#include "framework/trace.h"

namespace amlp {

void Queue::allocate_outputs(Op& op) {
  for (size_t i = op.bufs.reads; i < op.bufs.refs.size(); ++i) {
    Storage* r = op.bufs.refs[i].get();
    if (!r || r->allocated()) continue;
    r->allocate_now();
    count_allocated(*r);
  }
}

BacklogBytes Queue::finish(Op& op) {
  if (blame_) note_name(op.seq, op.name);  // for a fault a blocker meets after the op is gone
  op.kernel = nullptr;  // drop captures before the buffers they may point into
  const BacklogBytes freed = unpin_and_release(op.bufs.refs, this);
  // Buffers go back to their pools here, before the launch is announced; the
  // op's own memory is freed here too, not under the queue's lock.
  op.bufs.refs.clear();
  op.bufs.scalars.clear();
  std::vector<QueueDep>().swap(op.deps);
  op.bufs.payload = {};
  return freed;  // the caller debits this queue's backlog under its lock
}

namespace {
// Builds an error without letting a failure to build it (bad_alloc) escape.
template <class Make>
std::exception_ptr make_error(Make make) {
  try {
    return make();
  } catch (...) {
    return std::current_exception();
  }
}
}  // namespace

// Dropped (drop_pending): the op never runs and reports nothing; its outputs
// say why to whoever reads them.
void Queue::drop(Op& op) {
  const std::exception_ptr e = make_error([&] {
    return std::make_exception_ptr(Dropped(
        detail::concat("op '", op.name, "' (op #", op.seq, " on ", name_, ") was dropped before it ran: the run stopped")));
  });
  for (size_t i = op.bufs.reads; i < op.bufs.refs.size(); ++i)
    if (const auto& r = op.bufs.refs[i]) r->write_failed(e);
}

// Another queue's ops this one reads or must not overtake: on the device
// where it can (a stream waiting on another's event), else on the host,
// which is time the worker is not busy.
Queue::Failure Queue::wait_for_producers(const Op& op) {
  for (const QueueDep& d : op.deps) {
    if (d.queue->complete(d.seq)) continue;
    const uint64_t t0 = steady_ns();
    d.queue->wait_launched(d.seq);
    const bool on_device = sync_ && d.queue->sync_ && d.queue->sync_->asynchronous() &&
                           sync_->wait_on_device(*d.queue->sync_, d.seq);
    Failure f;
    if (!on_device) {
      try {
        d.queue->wait_complete(d.seq);
      } catch (const DeviceFault& e) {  // the producer's device faulted: blamed on its op as exposer
        f = {d.queue->exposed_fault(d.queue->name_of(d.seq), d.seq, e), Failure::DeviceFault};
      }
    }
    clock_.blocked(steady_ns() - t0);
    if (f.error) return f;
  }
  return {};
}

// An input that carries an earlier op's failure: the op does not run.
Queue::Failure Queue::check_inputs(const Op& op) const {
  for (size_t i = 0; i < op.bufs.reads; ++i)
    if (const auto& r = op.bufs.refs[i]; r && r->failed()) return {r->error(), Failure::Upstream};
  for (size_t i = 0; i < op.bufs.reads; ++i)  // an op's writer always allocates it first
    if (const auto& r = op.bufs.refs[i]; r && !r->allocated())
      return {make_error([&] {
        return std::make_exception_ptr(
            KernelError(op.name, op.seq, name_, detail::concat("read #", i, " has no memory: no op has written it")));
      })};
  return {};
}

// The outputs' blocks (allocation policy run: taken as the op starts), made
// resident where the CPU's populator has not reached them yet.
Queue::Failure Queue::prepare_outputs(Op& op) {
  try {
    allocate_outputs(op);
  } catch (const OutOfMemory& e) {
    return {std::make_exception_ptr(e.starting_op(op.name, op.seq, name_))};
  }
  try {
    for (size_t i = op.bufs.reads; i < op.bufs.refs.size(); ++i)
      if (Storage* r = op.bufs.refs[i].get()) r->prepare_write();
  } catch (const OutOfMemory& e) {
    return {std::make_exception_ptr(e.starting_op(op.name, op.seq, name_, /*resident=*/true))};
  }
  return {};
}

// The kernel, between the device's per-op hooks where it has them (CUDA:
// NVTX, the completion event) and under the kernel clock while it is on.
Queue::Failure Queue::launch(Op& op) {
  Failure f;
  if (hooks_) sync_->before_op(op.seq, op.name);
  const OpArgs args(op.bufs.refs.data(), op.bufs.reads, op.bufs.refs.size() - op.bufs.reads, op.name,
                    &op.bufs.scalars, &op.bufs.payload);
  const bool clocked = kernel_clock();
  const uint64_t c0 = clocked ? steady_ns() : 0;
  try {
    op.kernel(args);
  } catch (const DeviceFault& e) {  // the device reported an earlier failure during this op's launch
    f = {exposed_fault(op.name, op.seq, e), Failure::DeviceFault};
  } catch (const std::exception& e) {
    f = {std::make_exception_ptr(KernelError(op.name, op.seq, name_, e.what()))};
  } catch (...) {
    f = {std::make_exception_ptr(KernelError(op.name, op.seq, name_, "unknown exception"))};
  }
  if (clocked) kernel_ns_.fetch_add(steady_ns() - c0, std::memory_order_relaxed);
  if (hooks_) {
    try {
      sync_->after_op(op.seq, pushed_seen_.load(std::memory_order_relaxed) <= op.seq);
    } catch (const DeviceFault& e) {  // seen as this op completed: perhaps an earlier op's
      if (!f.error) f = {exposed_fault(op.name, op.seq, e), Failure::DeviceFault};
    } catch (const std::exception& e) {
      if (!f.error) f = {std::make_exception_ptr(KernelError(op.name, op.seq, name_, e.what()))};
    }
  }
  return f;
}

// Runs one op: the parts above, each only when it has something to do.
// Never throws: every failure becomes the op's error. True when its kernel
// ran and succeeded.
bool Queue::run(Op& op) {
  if (dropped(op.seq)) {
    drop(op);
    return false;
  }
  Failure f;
  try {
    if (!op.deps.empty()) f = wait_for_producers(op);
    if (!f.error) f = check_inputs(op);
    if (!f.error) f = prepare_outputs(op);
    if (!f.error) f = launch(op);
  } catch (...) {  // building an error (or waiting) failed itself, e.g. bad_alloc
    if (!f.error) f = {std::current_exception()};
  }
  for (size_t i = op.bufs.reads; i < op.bufs.refs.size(); ++i)
    if (const auto& r = op.bufs.refs[i]) f.error ? r->write_failed(f.error) : r->write_succeeded();
  // Only the queue whose op failed keeps the error for its next blocker. An
  // op that did not run because of it carries it in its outputs only: were
  // it kept here too, a blocker that already reported it (which makes every
  // queue forget it) could be followed by this keep, and report it twice.
  if (f.error && f.cause != Failure::Upstream) keep_error(f.error, f.cause == Failure::DeviceFault);
  return !f.error;
}

BacklogBytes Queue::execute(Op& op) {
  const uint64_t t0 = trace::enabled() ? trace::now_us() : 0;
  run(op);
  if (t0) {
    try {
      trace::span(track_, op.name, t0, trace::now_us(), op.seq);
    } catch (...) {  // a full trace buffer loses a span, never the op
    }
  }
  return finish(op);
}

}  // namespace amlp
