#include "train/option_checks.h"

#include "train/sweep.h"
#include "train/sync_auto.h"

namespace amlp::train {

std::string options_problem(const Options& o) {
  if (o.compare && o.compare_policies)
    return "--compare and --compare-policies each print a table of their own: choose one";
  if (std::string why = sweep_options_problem(o); !why.empty()) return why;
  if (std::string why = sync_auto_options_problem(o); !why.empty()) return why;
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
