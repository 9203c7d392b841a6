#include "models/mlp.h"

#include "framework/nn/dense.h"
#include "framework/parse.h"

namespace amlp::models {

LayerSpec parse_layer_spec(const std::string& spec) {
  LayerSpec out;
  if (spec.empty()) return out;  // no hidden layer: linear regression
  out.hidden = parse_int_list(spec, "layer spec", 1, kMaxLayerWidth);
  return out;
}

std::string to_string(const LayerSpec& spec) {
  std::string s;
  for (int64_t h : spec.hidden) s += (s.empty() ? "" : ",") + std::to_string(h);
  return s;
}

std::unique_ptr<Sequential> make_mlp(const LayerSpec& spec, int64_t outputs) {
  auto net = std::make_unique<Sequential>();
  for (int64_t h : spec.hidden) net->add(std::make_unique<Dense>(h, Activation::ReLU));
  net->add(std::make_unique<Dense>(outputs));
  return net;
}

}  // namespace amlp::models
