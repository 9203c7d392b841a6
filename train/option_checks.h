// option_checks.h — the checks across train_mlp's options, once each value
// has parsed: options that do not combine, a value another one rules out.
// One line each, for "train_mlp: error: " and exit 2.
//
//   if (std::string why = options_problem(o); !why.empty()) fail(why);
#pragma once
#include <string>

#include "train/options.h"

namespace amlp::train {

// "" when the options combine, else why not (one line).
std::string options_problem(const Options& o);

}  // namespace amlp::train
