// train_mlp — the d2l "Asynchronous Computation" experiment: train an MLP with
// and without per-minibatch synchronization and show what each costs.
// See `train_mlp --help`; the work is in the asyncmlp_train library.
#include <iostream>

#include "train/driver.h"
#include "train/models/predict.h"
#include "train/plan/outputs.h"
#include "train/plan/parameters_file.h"
#include "train/options/options.h"
#include "train/runs/interrupt.h"

int main(int argc, char** argv) {
  using namespace amlp::train;
  const ParseOutcome p = parse_options(argc, argv);
  switch (p.status) {
    case ParseStatus::Error:
      std::cerr << "train_mlp: error: " << p.message << std::endl;
      return p.exit_code;
    case ParseStatus::Exit:
      std::cout << p.message;
      if (p.help) std::cout << models_help() << help_after_models();
      return 0;
    case ParseStatus::Run:
      break;
  }
  for (const std::string& why : {outputs_problem(p.options), load_problem(p.options)})  // before anything runs
    if (!why.empty()) {
      std::cerr << "train_mlp: error: " << why << std::endl;
      return kExitBadInput;
    }
  install_interrupt_handlers();  // SIGINT/SIGTERM: stop queueing, finish, write everything marked (130/143)
  return run_driver(p.options, std::cout, std::cerr);
}
