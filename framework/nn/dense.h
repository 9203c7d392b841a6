// dense.h — fully connected layer, y = act(x·Wᵀ + b), with Gluon's deferred
// initialisation: the input width is inferred at the first forward.
//
// Initialiser (MXNet's default, as in d2l): W ~ Uniform(−0.07, 0.07), drawn
// from the global Philox stream on the input's device; b = 0.
//
//   Dense d(2048, Activation::ReLU);
//   Tensor y = d(x);        // x: (B, in) → y: (B, 2048); W: (2048, in), b: (2048)
#pragma once
#include "framework/nn/block.h"

namespace amlp {

enum class Activation { None, ReLU };

class Dense : public Block {
 public:
  explicit Dense(int64_t units, Activation act = Activation::None, int64_t in_units = 0);
  Tensor forward(const Tensor& x) override;
  std::vector<Parameter*> parameters() override;
  std::string describe() const override;
  bool initialized() const { return weight_.value.defined(); }
  void initialize(int64_t in_units, Device d);

  static constexpr float kInitScale = 0.07f;

 private:
  int64_t units_, in_units_;
  Activation act_;
  Parameter weight_{"weight", {}};  // W: (units, in)
  Parameter bias_{"bias", {}};      // b: (units)
};

}  // namespace amlp
