#include "models/mlp.h"

#include <cerrno>
#include <cstdlib>

#include "framework/nn/dense.h"
#include "framework/error.h"

namespace amlp::models {

LayerSpec parse_layer_spec(const std::string& spec) {
  LayerSpec out;
  if (spec.empty()) return out;  // no hidden layer: linear regression
  size_t start = 0;
  while (true) {
    size_t comma = spec.find(',', start);
    std::string item = spec.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    char* end = nullptr;
    errno = 0;
    long long v = item.empty() ? 0 : std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || errno || !end || *end || v <= 0 || v > (1 << 20))
      throw Error("bad layer spec '" + spec + "': item '" + item +
                  "' is not a positive width (expected comma-separated integers like 2048,512)");
    out.hidden.push_back(v);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
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
