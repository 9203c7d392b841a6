// sgd.h — stochastic gradient descent with Gluon's Trainer semantics:
// step(batch_size) rescales gradients by 1/batch_size, so with a per-sample
// loss and backward() of ones, w -= lr · Σ_i ∇loss_i / batch_size.
//
//   g' = g / batch_size + wd · w
//   momentum == 0:  w -= lr · g'
//   otherwise:      m = momentum · m − lr · g';  w += m
#pragma once
#include <string>
#include <vector>

#include "framework/nn/block.h"

namespace amlp {

// "" when SGD takes these settings, else why not ("learning rate must be
// positive, got 0"): the constructor's own check, which a program's options
// make up front on the same floats.
std::string sgd_settings_problem(float lr, float momentum);

class SGD {
 public:
  SGD(std::vector<Parameter*> params, float lr, float momentum = 0.f, float weight_decay = 0.f);
  void step(int64_t batch_size);  // queues one update per parameter; never blocks
  // Drops the gradients (PyTorch's set_to_none): the queued updates still hold
  // them until they have run, then their buffers return to the pool.
  void zero_grad();
  float lr() const { return lr_; }

 private:
  std::vector<Parameter*> params_;
  std::vector<Tensor> momentum_;
  float lr_, momentum_coef_, wd_;
};

}  // namespace amlp
