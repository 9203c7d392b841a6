// block.h — the layer interface (Gluon's Block): forward() and parameters().
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "framework/tensor.h"

namespace amlp {

// A trainable tensor and its name (the optimizer keeps any momentum itself).
struct Parameter {
  std::string name;
  Tensor value;  // requires_grad
};

class Block {
 public:
  virtual ~Block() = default;
  virtual Tensor forward(const Tensor& x) = 0;
  // Parameters, in a stable order. Empty until initialised (deferred init).
  virtual std::vector<Parameter*> parameters() { return {}; }
  virtual std::string describe() const = 0;
  Tensor operator()(const Tensor& x) { return forward(x); }
};

}  // namespace amlp
