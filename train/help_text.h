// help_text.h — train_mlp --help's prose around the option table: what the
// program does, and after the options the models (train/predict.h), what
// --compare runs and the exit statuses.
//
//   std::cout << usage_text() << "\n" << option_table << help_footer();
#pragma once
#include <string>

namespace amlp::train {

std::string usage_text();
std::string help_footer();

}  // namespace amlp::train
