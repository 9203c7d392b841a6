#include "train/driver.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <new>
#include <memory>
#include <optional>
#include <ostream>

#include "framework/asyncmlp.h"
#include "train/runs/checked_output.h"
#include "train/runs/distributed_run.h"
#include "train/runs/experiment.h"
#include "train/runs/interrupt.h"
#include "train/studies/study.h"

namespace amlp::train {

void write_line(std::ostream& err, const std::string& line) { err << (line + '\n') << std::flush; }

namespace {

// Writes what the trace recorded, also when the run failed, marked with how
// it ended; true when it was written. A failure to write it is reported
// (unless an earlier one was) and becomes the program's failure, which the
// summary, written after, then records; it never masks the run's own error.
bool finish_trace(const Options& o, std::ostream& err, bool* ok, std::string* failure) {
  if (o.trace.empty()) return false;
  dist::ProcessGroup* group = rank_group(o);
  try {
    std::vector<std::pair<std::string, std::string>> other;
    if (!failure->empty()) {
      other = {{"status", "failed"}, {"error", *failure}};
    } else if (const int sig = interrupt_signal()) {
      other = {{"status", "interrupted"}, {"signal", signal_name(sig)}};
    } else {
      other = {{"status", "completed"}};
    }
    if (!group) {
      trace::stop_and_write(o.trace, other);
      return true;
    }
    // Each rank writes its own; rank 0 merges them, its clock the trace's.
    const double origin_us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count() -
        double(trace::now_us());
    other.emplace_back("steady_origin_us", std::to_string(origin_us));
    other.emplace_back("ranks", std::to_string(group->size()));
    std::string own_failure;  // reported after the barrier, which every rank must reach
    try {
      trace::stop_and_write(dist::rank_path(o.trace, group->rank()), other);
    } catch (const std::exception& e) {
      own_failure = e.what();
    }
    group->barrier();
    if (!own_failure.empty()) throw Error(own_failure);
    if (group->rank() == 0) merge_rank_traces(o.trace, group->size());
    return true;
  } catch (const std::exception& e) {
    const std::string what = std::string("--trace: ") + e.what();  // found after the run: the option named, as before it
    if (*ok) write_line(err, "train_mlp: error: " + what);
    if (failure->empty()) *failure = what;
    *ok = false;
    return false;
  }
}

// The program fails for a reason outside its runs (stdout, the trace or the
// summary could not be written): unless a run failed already, each run that
// completed takes that reason, so no summary says "completed" when the exit
// is 1. (Under --compare a mode that failed leaves the modes before it
// completed: the failed one says why.)
void mark_failed(std::vector<RunResult>& results, const std::string& why) {
  for (const RunResult& r : results)
    if (r.measured.status == RunStatus::Failed) return;
  for (RunResult& r : results)
    if (r.measured.status == RunStatus::Completed) {
      r.measured.status = RunStatus::Failed;
      r.measured.error = why;
    }
}

// The program failed before any run began (stdout closed or full at the
// first line): each run the study planned, marked failed with that reason,
// so the summary says what did not run and why instead of holding no run.
void mark_unstarted(const Study& study, const Options& o, const std::string& why, std::vector<RunResult>& results) {
  if (!results.empty()) return;
  try {
    for (const RunSpec& s : study.plan(o)) {
      RunResult r;
      r.asked = s;
      r.measured.status = RunStatus::Failed;
      r.measured.error = why;
      r.measured.final_loss = std::numeric_limits<double>::quiet_NaN();
      results.push_back(std::move(r));
    }
  } catch (const std::exception&) {  // a plan that needs what failed: the summary holds no run
    results.clear();
  }
}

// Throws when stdout (or whatever `out` is) failed a write: a closed pipe, a
// full disk, stdout closed at start (train/runs/checked_output.h).
void check_output(std::ostream& out) {
  out.flush();
  if (const std::string why = output_problem(out); !why.empty()) throw Error(why);
}

// --memory-limit: auto leaves the device's default (a CPU pool: the host's
// budget; a GPU: its own memory), none or 0 lifts it, BYTES sets it, on every
// device the run uses. CPU devices share the host: with several, each keeps
// an equal share of the host's budget (or of BYTES).
void apply_memory_limit(const Options& o) {
  const std::vector<Device> devs = run_devices(o);
  size_t cpus = 0;
  for (const Device& d : devs) cpus += d.is_cuda() ? 0 : 1;
  for (const Device& d : devs) {
    const size_t share = d.is_cuda() ? 1 : std::max<size_t>(1, cpus);
    const std::string of = share > 1 ? ", a 1/" + std::to_string(share) + " share for each CPU device" : "";
    if (o.memory_limit && *o.memory_limit == 0) {
      set_memory_limit(d, 0, "none (--memory-limit none)");
    } else if (o.memory_limit) {
      set_memory_limit(d, *o.memory_limit / share, "--memory-limit" + of);
    } else if (const dist::ProcessGroup* g = rank_group(o); g && !d.is_cuda()) {  // the ranks on this host share it
      const size_t ranks_share = share * static_cast<size_t>(g->local_size());
      const MemoryBudget host = host_memory_budget();
      if (host.bytes)
        set_memory_limit(d, host.bytes / ranks_share,
                         host.source + ", a 1/" + std::to_string(ranks_share) + " share for each rank on this host");
    } else if (share > 1) {
      const MemoryBudget host = host_memory_budget();
      if (host.bytes) set_memory_limit(d, host.bytes / share, host.source + of);
    }
  }
}

// The run's first line: the model, the data's shape, the devices and ranks.
void say_model(const Options& o, dist::ProcessGroup* group, std::ostream& out) {
  out << "model: " << models::make_mlp(o.hidden)->describe() << ", " << o.features << " features, " << o.batches
      << " batches of " << o.batch_size << ", lr " << o.lr << ", on " << (o.devices.empty() ? o.device.str() : o.devices_text)
      << (o.devices.empty() ? "" : " (data parallel: one replica per device)")
      << (group ? " (distributed: " + std::to_string(group->size()) + " ranks, one replica each, " +
                      std::to_string(blas_threads()) + " BLAS thread" + (blas_threads() == 1 ? "" : "s") + " per rank)"
                : "")
      << std::endl;
}

// --summary-json, written as the program ends (also for an interrupted run,
// and for a failed one in a single process: each run says how it ended).
// A summary that cannot be written fails the program, and the trace, when
// `retrace` (it was written and said nothing failed), is written again, marked failed.
void write_summary(const Study& study, const Options& o, std::ostream& err, bool retrace,
                   std::vector<RunResult>& results, bool* ok, std::string* failure) {
  try {
    study.write_summary(o.summary_json, results);
  } catch (const std::exception& e) {
    const std::string what = std::string("--summary-json: ") + e.what();
    if (*ok) write_line(err, "train_mlp: error: " + what);
    const bool trace_says_failed = !failure->empty();
    if (failure->empty()) *failure = what;
    *ok = false;
    mark_failed(results, *failure);
    if (retrace && !trace_says_failed) finish_trace(o, err, ok, failure);
  }
}

// 0, or for a run a signal interrupted 128 + the signal, saying where it stopped.
int interrupted_status(const Options& o, const std::vector<RunResult>& results, std::ostream& err) {
  const int sig = interrupt_signal();
  if (!sig) return 0;
  const RunResult* last = results.empty() ? nullptr : &results.back();
  write_line(err, "train_mlp: interrupted at batch " + std::to_string(last ? last->measured.batches_done : 0) + " of " +
                      std::to_string(last ? last->asked.options.total_batches() : o.total_batches()) + " (" +
                      signal_name(sig) + "): the queued batches finished; the summary and trace say \"interrupted\"");
  return 128 + sig;
}

}  // namespace

int run_driver(const Options& given, std::ostream& rank0_out, std::ostream& err, std::vector<RunResult>* results_out) {
  // --distributed mpi: join the other ranks first (options checked alike: bad input, exit 2).
  Options o = given;
  if (given.distributed) {
    try {
      o = join_ranks(given);
    } catch (const dist::DistError& e) {
      dist::ProcessGroup* g = dist::ProcessGroup::current();
      if (!g || g->rank() == 0) write_line(err, std::string("train_mlp: error: ") + e.what());  // rank 0 speaks for all
      if (g) g->finalize();
      return kExitBadInput;
    }
  }
  dist::ProcessGroup* group = rank_group(o);
  std::ostream quiet_rank(nullptr);  // the other ranks' lines would repeat rank 0's
  std::ostream& out = group && group->rank() != 0 ? quiet_rank : rank0_out;
  std::vector<RunResult> results;
  const std::vector<std::unique_ptr<Study>> studies = studies_for(o);  // train/studies/study.h
  Study& study = *studies.back();  // the one whose runs are made
  bool ok = true;
  std::string failure;  // the one line reported
  const auto fail = [&](const std::string& what) {
    failure = what;
    write_line(err, "train_mlp: error: " + (group ? group->name() + ": " : std::string()) + what);
    ok = false;
    if (group) group->abort_all(what, kExitRunFailed);  // every other rank names this one and exits
  };
  try {
    if (o.blocking) set_blocking(true);
    set_tf32(o.tf32);
    if (o.device_fell_back) out << "device auto: no GPU visible, falling back to cpu:0" << std::endl;
    apply_memory_limit(o);
    say_model(o, group, out);
    check_output(out);  // stdout closed or a closed pipe: nothing is worth running
    if (!o.trace.empty()) trace::start();
    Options resolved = o;
    for (const std::unique_ptr<Study>& s : studies) s->settle(resolved, out);  // --host-work match, --sync auto
    study.run(resolved, out, results);
    gather_rank_figures(results);  // collective: rank 0's results gain every rank's figures
    study.report(resolved, results, out);
    check_output(out);
  } catch (const RunFailed& e) {  // the run dropped its queued work and measured what it did (in `results`)
    fail(e.what());
  } catch (const std::bad_alloc&) {
    fail("the host ran out of memory (std::bad_alloc)");
  } catch (const std::exception& e) {
    fail(e.what());
  }
  if (!ok) {
    drop_pending();  // nothing queued is worth waiting for now
    try {
      waitall();  // the op running ends, so the trace shows it
    } catch (const std::exception&) {
      // already reported the first failure
    }
  }
  // The trace, then the summary, each marked with how the program ends: a
  // trace that cannot be written fails the runs the summary records, and a
  // summary that cannot be written has the trace written again, marked
  // failed (in one process; a rank's trace is merged once).
  const bool trace_written = finish_trace(o, err, &ok, &failure);
  if (!ok) mark_unstarted(study, o, failure, results);
  if (!ok) mark_failed(results, failure);
  // Written also for an interrupted run, and for a failed one in a single
  // process: each run says how it ended. Under --distributed a failure never
  // gets here: fail() ends every rank (abort_all) first.
  if (!o.summary_json.empty() && (!group || group->rank() == 0))
    write_summary(study, o, err, trace_written && !group, results, &ok, &failure);
  if (results_out) *results_out = results;
  const int status = ok ? interrupted_status(o, results, err) : kExitRunFailed;
  // Last (a launcher ending the job may not wait for it), and also for one
  // rank under mpirun, which joined MPI though it has no peer (rank_group: none).
  if (dist::ProcessGroup* g = given.distributed ? dist::ProcessGroup::current() : nullptr) g->finalize();
  return status;
}

}  // namespace amlp::train
