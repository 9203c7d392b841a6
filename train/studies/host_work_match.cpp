// host_work_match.cpp — --host-work match as a study that settles the options
// of the others (study.h): the device's time per batch, measured once over
// synchronized batches before any run (and before --sync auto's measurement),
// becomes every run's host work. Its option is one run's (--host-work).
#include <memory>
#include <ostream>

#include "train/runs/run_plan.h"
#include "train/studies/study.h"

namespace amlp::train {
namespace {

struct HostWorkMatch : Study {
  void settle(Options& o, std::ostream& out) const override { o.host_work = resolve_host_work(o, out); }
};

const RegisterStudy host_work_match{{"host-work match", true, 10, [](const Options& o) { return o.host_work.match_device; },
                                     [] { return std::unique_ptr<Study>(std::make_unique<HostWorkMatch>()); }}};

}  // namespace
}  // namespace amlp::train
