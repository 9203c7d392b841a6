// option_checks.cpp — the checks across the options, once each value has
// parsed (options_problem, options.h): options that do not combine, a value
// another one rules out. One line each, for "train_mlp: error: " and exit 2.
#include <cstdint>
#include <string>

#include "train/options/option_values.h"
#include "train/options/options.h"
#include "train/options/study_options.h"

namespace amlp::train {

std::string options_problem(const Options& o) {
  for (const StudyOptionsEntry& e : study_options_entries())  // what each study's settings do not combine with
    if (std::string why = e.problem(o); !why.empty()) return why;
  if (static_cast<int64_t>(o.batches) * o.epochs > kMaxBatches)
    return "--epochs " + std::to_string(o.epochs) + " x --batches " + std::to_string(o.batches) + " is " +
           std::to_string(static_cast<int64_t>(o.batches) * o.epochs) + " batches: at most 100000000 in all";
  if (!o.data.empty() && o.data_queue)
    return "--data's rows are copied by the frontend's queued copy: not with --data-queue (random data drawn on a loader queue)";
  if (o.distributed && !o.devices.empty())
    return "--devices and --distributed mpi do not combine: under mpirun each rank trains one replica on its --device";
  if (o.devices.size() > static_cast<size_t>(o.batch_size))
    return "--devices: " + std::to_string(o.devices.size()) + " devices cannot split a batch of " +
           std::to_string(o.batch_size) + " (--batch-size): each needs at least one row";
  for (const Device& d : o.devices)
    if (o.data_queue && d.is_cuda())
      return "--data-queue needs CPU devices: on " + d.str() +
             " every kernel launches onto the device's one stream (use --devices cpu:0,cpu:1)";
  if (o.data_queue && o.device.is_cuda())
    return "--data-queue needs a CPU device: on " + o.device.str() +
           " every kernel launches onto the device's one stream (use --device cpu)";
  return "";
}

}  // namespace amlp::train
