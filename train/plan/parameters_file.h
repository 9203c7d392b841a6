// parameters_file.h — the --load file against the model the options describe
// (the d2l MLP: Dense(h1, relu) ... Dense(1) on --features), before anything
// runs: every tensor there with the model's shape (framework/nn/checkpoint.h).
//
//   if (std::string why = load_problem(options); !why.empty()) refuse("--load: " + why);   // status 2
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "framework/tensor.h"
#include "train/options/options.h"

namespace amlp::train {

// The model's parameters by name and shape: dense0.weight (h1, features), dense0.bias (h1), ...
std::vector<std::pair<std::string, Shape>> model_parameter_shapes(const Options& o);
// "" without --load or when its file fits the model, else one line ("--load: ...").
std::string load_problem(const Options& o);

}  // namespace amlp::train
