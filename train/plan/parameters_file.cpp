// parameters_file.cpp — the --load file checked up front (parameters_file.h).
#include "train/plan/parameters_file.h"

#include "framework/error.h"
#include "framework/nn/checkpoint.h"
#include "train/options/file_options.h"

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

namespace {

// The file read last and its tensors: one --load per process.
struct Loaded {
  std::string path;
  std::vector<NamedValues> tensors;
};
Loaded& loaded() {
  static Loaded l;
  return l;
}

}  // namespace

const std::vector<NamedValues>& loaded_parameters(const std::string& path) {
  Loaded& l = loaded();
  if (l.path != path) {
    l.tensors = read_safetensors(path, file_option("load").wait_s);  // the table of files
    l.path = path;
  }
  return l.tensors;
}

std::string load_problem(const Options& o) {
  if (o.load.empty()) return "";
  std::string why;
  try {
    why = parameters_problem(o.load, loaded_parameters(o.load), model_parameter_shapes(o));
  } catch (const Error& e) {
    why = e.what();
  }
  return why.empty() ? "" : "--load: " + why;
}

}  // namespace amlp::train
