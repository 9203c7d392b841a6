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

// The room for tensors the limit a refusal at load suggests leaves
// (framework/runtime.h): the model's and one batch's, from --batch-size,
// --features and --hidden on the command line (their defaults otherwise; a
// config file is not read this early). Measured peaks are 2 to 2.4 times
// the activations (B x (features + every hidden width + 1)) and the
// parameters; three times each, with the parameters' gradients and
// momentum, leaves a margin. Reads argv only: it runs before any
// initialiser, so it allocates nothing.
extern "C" size_t amlp_tensor_room_at_load(int argc, char** argv) {
  const auto after = [](const char* a, const char* prefix) -> const char* {
    while (*prefix && *a == *prefix) ++a, ++prefix;
    return *prefix ? nullptr : a;
  };
  // The option's value: "--name V" or "--name=V"; null when `a` is not it.
  const auto value = [&](int& i, const char* name) -> const char* {
    const char* rest = after(argv[i], name);
    if (!rest) return nullptr;
    if (*rest == '=') return rest + 1;
    if (*rest || i + 1 >= argc || !argv[i + 1]) return nullptr;
    return argv[++i];
  };
  constexpr double kMax = double(size_t(1) << 50);  // past any machine: the sum stays finite
  const auto number = [&](const char*& s) {
    double n = 0;
    for (; *s >= '0' && *s <= '9' && n < kMax; ++s) n = n * 10 + (*s - '0');
    return n;
  };
  double batch = 1024, features = 512;
  const char* hidden = "2048,512";
  for (int i = 1; i < argc && argv[i]; ++i) {
    if (const char* v = value(i, "--batch-size")) batch = number(v);
    else if (const char* v = value(i, "--features")) features = number(v);
    else if (const char* v = value(i, "--hidden")) hidden = v;
  }
  double params = 0, widths = 0, in = features;
  for (const char* s = hidden; *s;) {
    const double h = number(s);
    params += h * in + h;
    widths += h;
    in = h;
    if (*s != ',') break;
    ++s;
  }
  params += in + 1;  // the output layer
  const double bytes = 4 * (3 * params + 3 * batch * (features + widths + 1));
  return bytes < double(size_t(64) << 20) ? size_t(64) << 20 : bytes > kMax ? size_t(kMax) : size_t(bytes);
}

int main(int argc, char** argv) {
  using namespace amlp::train;
  install_checked_stdout();  // first: a closed fd 1 gets /dev/null before any file can take its number
  amlp::set_memory_limit_knob("--memory-limit");  // what out-of-memory advice names
  const ParseOutcome p = parse_options(argc, argv);
  switch (p.status) {
    case ParseStatus::Error:
      write_line(std::cerr, "train_mlp: error: " + p.message);
      return p.exit_code;
    case ParseStatus::Exit:
      std::cout << p.message;
      if (p.help) std::cout << models_help() << help_after_models() << "\n" << file_options_help();
      std::cout.flush();
      if (const std::string why = output_problem(std::cout); !why.empty()) {
        write_line(std::cerr, "train_mlp: error: " + why);
        return kExitRunFailed;
      }
      return 0;
    case ParseStatus::Run:
      break;
  }
  for (const std::string& why :
       {outputs_problem(p.options, planned_memory_logs(p.options)), load_problem(p.options)})  // before anything runs
    if (!why.empty()) {
      write_line(std::cerr, "train_mlp: error: " + why);
      return kExitBadInput;
    }
  // SIGINT/SIGTERM/SIGHUP: stop queueing, finish, write everything marked
  // (130/143/129); SIGPIPE ignored: a closed stdout fails the run (exit 1).
  try {
    amlp::check_environment();  // a library switch set to a value it does not take: bad input
  } catch (const amlp::EnvError& e) {
    write_line(std::cerr, std::string("train_mlp: error: ") + e.what());
    return kExitBadInput;
  }
  install_interrupt_handlers();
  return run_driver(p.options, std::cout, std::cerr);
}
