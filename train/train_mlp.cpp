// train_mlp — the d2l "Asynchronous Computation" experiment: train an MLP with
// and without per-minibatch synchronization and show what each costs.
// See `train_mlp --help`; the work is in the asyncmlp_train library.
#include <iostream>

#include "framework/error.h"
#include "framework/runtime.h"
#include "train/driver.h"
#include "train/predict/predict.h"
#include "train/options/file_options.h"
#include "train/plan/outputs.h"
#include "train/plan/parameters_file.h"
#include "train/options/options.h"
#include "train/runs/checked_output.h"
#include "train/studies/study.h"
#include "train/runs/interrupt.h"

int main(int argc, char** argv) {
  using namespace amlp::train;
  install_checked_stdout();  // first: a closed fd 1 gets /dev/null before any file can take its number
  amlp::set_memory_limit_knob("--memory-limit");  // what out-of-memory advice names
  const ParseOutcome p = parse_options(argc, argv);
  switch (p.status) {
    case ParseStatus::Error:
      std::cerr << "train_mlp: error: " << p.message << std::endl;
      return p.exit_code;
    case ParseStatus::Exit:
      std::cout << p.message;
      if (p.help) std::cout << models_help() << help_after_models() << "\n" << file_options_help();
      std::cout.flush();
      if (const std::string why = output_problem(std::cout); !why.empty()) {
        std::cerr << "train_mlp: error: " << why << std::endl;
        return kExitRunFailed;
      }
      return 0;
    case ParseStatus::Run:
      break;
  }
  for (const std::string& why :
       {outputs_problem(p.options, planned_memory_logs(p.options)), load_problem(p.options)})  // before anything runs
    if (!why.empty()) {
      std::cerr << "train_mlp: error: " << why << std::endl;
      return kExitBadInput;
    }
  // SIGINT/SIGTERM/SIGHUP: stop queueing, finish, write everything marked
  // (130/143/129); SIGPIPE ignored: a closed stdout fails the run (exit 1).
  try {
    amlp::check_environment();  // a library switch set to a value it does not take: bad input
  } catch (const amlp::EnvError& e) {
    std::cerr << "train_mlp: error: " << e.what() << std::endl;
    return kExitBadInput;
  }
  install_interrupt_handlers();
  return run_driver(p.options, std::cout, std::cerr);
}
