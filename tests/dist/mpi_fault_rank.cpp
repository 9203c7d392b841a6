// Covers framework/dist/failure.cpp, framework/dist/process_group.cpp (the rank program of mpi_faults).
// one rank of a small distributed training run with a
// fault injected on its last rank, started by mpi_faults.cpp under mpirun:
//   ok       every rank trains 8 steps and exits 0
//   throw    the last rank throws at step 3, prints its line and calls
//            abort_all(); the others are blocked in that step's reduction
//   kill     the last rank sends itself SIGKILL at step 3
//   options  the last rank's options differ: check_same refuses on every
//            rank, rank 0 prints the line, every rank exits 2
//   stop     the last rank asks to stop at step 3 (as an interrupt would):
//            every rank stops after step 3 + lag (2) and exits 0
#include <csignal>
#include <cstring>
#include <iostream>
#include <stdexcept>

#include "framework/asyncmlp.h"
#include "framework/nn/dist_data_parallel.h"
#include "models/mlp.h"

using namespace amlp;

namespace {

constexpr const char* kProgram = "mpi_fault_rank";

// Returns the steps trained.
int train(DistDataParallel& ddp, const std::string& scenario, bool last) {
  SGD sgd(ddp.parameters(), 0.05f);
  L2Loss loss;
  for (int step = 0; step < 8; ++step) {
    if (last && step == 3 && scenario == "throw") throw std::runtime_error("injected fault at step 3");
    if (last && step == 3 && scenario == "kill") std::raise(SIGKILL);
    Tensor X = ddp.randn_local({32, 16}), y = ones({ddp.local_rows(32)}, ddp.device());
    Tensor l = loss(ddp.replica()(X), y);
    ddp.backward(l);
    sgd.step(32);
    sgd.zero_grad();
    ddp.mean(l, 32).item();  // every rank waits for the step's reductions here
    if (ddp.group().agree_to_stop(last && step == 3 && scenario == "stop", /*lag=*/2)) return step + 1;
  }
  return 8;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string scenario = argc > 1 ? argv[1] : "ok";
  dist::ProcessGroup& g = dist::ProcessGroup::init();
  g.set_program_name(kProgram);
  const bool last = g.rank() == g.size() - 1;
  try {
    std::string options = "batch=32\nlr=0.05\n";
    if (last && scenario == "options") options = "batch=32\nlr=0.1\n";
    g.check_same("options", options);
    manual_seed(1);
    DistDataParallel ddp(g, Device::cpu(0), [] { return models::make_mlp({{16}}); }, 16);
    const int steps = train(ddp, scenario, last);
    waitall();
    std::cout << kProgram << ": " << g.name() << " trained " << steps << " steps" << std::endl;
  } catch (const dist::DistError& e) {  // bad input, refused on every rank: rank 0 says why
    if (g.rank() == 0) std::cerr << (std::string(kProgram) + ": error: " + e.what() + "\n") << std::flush;
    g.finalize();
    return 2;
  } catch (const std::exception& e) {
    // One write: the other rank's line (framework/dist/failure.cpp) never lands inside it.
    std::cerr << (std::string(kProgram) + ": error: " + g.name() + ": " + e.what() + "\n") << std::flush;
    g.abort_all(e.what(), 1);
  }
  g.finalize();
  return 0;
}
