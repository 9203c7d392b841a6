// parameters_file.h — the --load file against the model the options describe
// (the d2l MLP: Dense(h1, relu) ... Dense(1) on --features), before anything
// runs: every tensor there with the model's shape, every value finite
// (framework/nn/checkpoint.h). The file is read once, by the check; the run
// loads what it read (a pipe, `--load <(cat f.st)`, cannot be read twice).
//
//   if (std::string why = load_problem(options); !why.empty()) refuse("--load: " + why);   // status 2
//   trainer.load(options.load, loaded_parameters(options.load));
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "framework/nn/checkpoint.h"
#include "framework/tensor.h"
#include "train/options/options.h"

namespace amlp::train {

// The model's parameters by name and shape: dense0.weight (h1, features), dense0.bias (h1), ...
std::vector<std::pair<std::string, Shape>> model_parameter_shapes(const Options& o);
// "" without --load or when its file fits the model, else one line ("--load: ...").
std::string load_problem(const Options& o);
// The tensors of the --load file `path`, as load_problem read them (read now
// if it did not). Throws amlp::Error naming the file.
const std::vector<NamedValues>& loaded_parameters(const std::string& path);

}  // namespace amlp::train
