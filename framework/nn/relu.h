// relu.h — ReLU as a block: y = max(x, 0).
#pragma once
#include "framework/nn/block.h"
#include "framework/ops.h"

namespace amlp {

class ReLU : public Block {
 public:
  Tensor forward(const Tensor& x) override { return relu(x); }
  std::string describe() const override { return "ReLU"; }
};

}  // namespace amlp
