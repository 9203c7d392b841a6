// help_text.h — --help's prose around the option tables: what the program
// does before them; after them the models (train/predict/predict.h), each
// study's paragraph (its StudyOptionsEntry::help, in its own file) and the
// exit statuses (help_after_models, options.h); and --version's line.
//
//   std::string help = help_text(tables);   // the usage, then the tables as Boost prints them
#pragma once
#include <string>

#include "train/options/program_options.h"

namespace amlp::train {

// --help's first part: the usage, a blank line, then `tables`.
std::string help_text(const po::options_description& tables);
// --version's line: "asyncmlp 0.1.0 (CUDA backend: yes|no)\n".
std::string version_text();

}  // namespace amlp::train
