// one_network.h — the reference that data parallelism is held to: one
// network on one device trained with the same seed and the same batches
// (randn rows, labels of ones), its mean loss read after every step.
#pragma once
#include <functional>
#include <memory>
#include <vector>

#include "framework/asyncmlp.h"

namespace amlp::testing {

inline std::vector<float> one_network_losses(const std::function<std::unique_ptr<Block>()>& make, int64_t features,
                                             uint64_t seed, int64_t batch, int steps, float lr,
                                             Device d = Device::cpu(0)) {
  manual_seed(seed);
  std::unique_ptr<Block> net = make();
  {
    NoGradGuard ng;
    net->forward(zeros({1, features}, d));  // deferred initialisation draws the weights
  }
  SGD sgd(net->parameters(), lr);
  std::vector<float> losses;
  for (int s = 0; s < steps; ++s) {
    Tensor l = L2Loss()(net->forward(randn({batch, features}, d)), ones({batch}, d));
    l.backward();
    sgd.step(batch);
    sgd.zero_grad();
    NoGradGuard ng;
    losses.push_back(mean(l).item());
  }
  return losses;
}

}  // namespace amlp::testing
