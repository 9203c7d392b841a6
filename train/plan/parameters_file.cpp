// parameters_file.cpp — the --load file checked up front (parameters_file.h).
#include "train/plan/parameters_file.h"

#include "framework/nn/checkpoint.h"

namespace amlp::train {

std::vector<std::pair<std::string, Shape>> model_parameter_shapes(const Options& o) {
  std::vector<std::pair<std::string, Shape>> ps;
  int64_t in = o.features;
  std::vector<int64_t> units = o.hidden.hidden;
  units.push_back(1);  // the output layer (models/mlp.h)
  for (size_t i = 0; i < units.size(); ++i) {
    const std::string layer = "dense" + std::to_string(i);
    ps.emplace_back(layer + ".weight", Shape{units[i], in});
    ps.emplace_back(layer + ".bias", Shape{units[i]});
    in = units[i];
  }
  return ps;
}

std::string load_problem(const Options& o) {
  if (o.load.empty()) return "";
  const std::string why = parameters_problem(o.load, model_parameter_shapes(o));
  return why.empty() ? "" : "--load: " + why;
}

}  // namespace amlp::train
