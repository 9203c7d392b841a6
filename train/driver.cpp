#include "train/driver.h"

#include <new>
#include <ostream>

#include "framework/asyncmlp.h"
#include "train/summary_json.h"

namespace amlp::train {

namespace {

// Writes what the trace recorded, also when the run failed; a failure to
// write it is reported but never masks the run's own error.
void finish_trace(const Options& o, std::ostream& err, bool* ok) {
  if (o.trace.empty()) return;
  try {
    trace::stop_and_write(o.trace);
  } catch (const std::exception& e) {
    if (*ok) err << "train_mlp: error: " << e.what() << std::endl;
    *ok = false;
  }
}

}  // namespace

int run_driver(const Options& o, std::ostream& out, std::ostream& err, std::vector<RunResult>* results_out) {
  std::vector<RunResult> results;
  bool ok = true;
  try {
    if (o.blocking) set_blocking(true);
    set_tf32(o.tf32);
    if (o.device_fell_back) out << "device auto: no GPU visible, falling back to cpu:0" << std::endl;
    set_memory_limit(o.device, o.memory_limit);
    out << "model: " << models::make_mlp(o.hidden)->describe() << ", " << o.features << " features, " << o.batches
        << " batches of " << o.batch_size << ", lr " << o.lr << ", on " << o.device.str() << std::endl;
    if (!o.trace.empty()) trace::start();
    if (o.compare) {
      results = run_compare(o, out);
      print_compare_table(results, out);
    } else {
      results.push_back(run_experiment(spec_from_options(o), out));
      print_summary(results.back(), out);
    }
  } catch (const std::bad_alloc&) {
    err << "train_mlp: error: the host ran out of memory" << std::endl;
    ok = false;
  } catch (const std::exception& e) {
    err << "train_mlp: error: " << e.what() << std::endl;
    ok = false;
  }
  if (!ok) {
    try {
      waitall();  // let the queue finish what was pushed, so the trace shows it
    } catch (const std::exception&) {
      // already reported the first failure
    }
  }
  finish_trace(o, err, &ok);
  if (ok && !o.summary_json.empty()) {
    try {
      write_summary_json(o.summary_json, results);
    } catch (const std::exception& e) {
      err << "train_mlp: error: " << e.what() << std::endl;
      ok = false;
    }
  }
  if (results_out) *results_out = results;
  return ok ? 0 : kExitRunFailed;
}

}  // namespace amlp::train
