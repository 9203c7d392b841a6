// Covers framework/nn/sgd.cpp, framework/nn/dense.cpp, framework/nn/autograd.cpp, models/mlp.cpp.
// the pieces train together: SGD solves a linear
// regression, the d2l-shaped MLP's loss falls, a fixed seed gives the same
// loss trajectory twice, and SGD's update (Gluon semantics, with momentum
// and weight decay) matches a hand-written reference step for step.
#include <cmath>
#include <cstring>

#include "models/mlp.h"
#include "test_util.h"

namespace amlp::testing {
namespace {

class Training : public DeviceTest {
 protected:
  // Mean of the per-sample L2 loss, evaluated without recording (blocks).
  float mean_loss(Sequential& net, const Tensor& x, const Tensor& y) {
    NoGradGuard ng;
    return mean(l2_loss(net(x), y)).item();
  }
  // `steps` full-batch SGD steps, never synchronised in between.
  void train(Sequential& net, SGD& sgd, const Tensor& x, const Tensor& y, int steps) {
    for (int i = 0; i < steps; ++i) {
      Tensor loss = l2_loss(net(x), y);
      loss.backward();
      sgd.step(x.dim(0));
    }
  }
};

// y = X·w* + b*: one Dense (make_mlp with no hidden layer) recovers w* and b*.
TEST_P(Training, SgdSolvesLinearRegression) {
  manual_seed(3);
  const int64_t n = 64, in = 4;
  const std::vector<float> w_star{2.f, -3.4f, 1.5f, 0.5f}, b_star{4.2f};
  Tensor x = randn({n, in}, dev());
  Tensor y = linear(x, from_host({1, in}, w_star.data(), dev()), from_host({1}, b_star.data(), dev()));  // (n, 1)
  auto net = models::make_mlp(models::LayerSpec{}, 1);
  const float initial = mean_loss(*net, x, y);  // also initialises the layer
  SGD sgd(net->parameters(), 0.1f);
  train(*net, sgd, x, y, 200);
  const float final_loss = mean_loss(*net, x, y);
  EXPECT_LT(final_loss * 100.f, initial) << "initial " << initial << ", final " << final_loss;
  std::vector<Parameter*> ps = net->parameters();
  const std::vector<float> w = ps[0]->value.to_host(), b = ps[1]->value.to_host();
  for (int64_t i = 0; i < in; ++i) EXPECT_NEAR(w[i], w_star[i], 1e-2) << "weight " << i;
  EXPECT_NEAR(b[0], b_star[0], 1e-2);
}

TEST_P(Training, MlpLossFallsOnASmallProblem) {
  manual_seed(4);
  const int64_t n = 64;
  Tensor x = randn({n, 16}, dev());
  Tensor y = ones({n}, dev());  // the book's labels
  auto net = models::make_mlp(models::LayerSpec{{32, 16}}, 1);  // Dense(32,relu) → Dense(16,relu) → Dense(1)
  const float initial = mean_loss(*net, x, y);
  SGD sgd(net->parameters(), 0.05f);
  train(*net, sgd, x, y, 100);
  const float final_loss = mean_loss(*net, x, y);
  EXPECT_LT(final_loss * 10.f, initial) << "initial " << initial << ", final " << final_loss;
}

TEST_P(Training, FixedSeedGivesTheSameLossTrajectory) {
  auto trajectory = [&] {
    manual_seed(9);
    Tensor x = randn({32, 8}, dev());
    Tensor y = randn({32}, dev());
    auto net = models::make_mlp(models::LayerSpec{{16, 8}}, 1);
    std::vector<float> losses{mean_loss(*net, x, y)};
    SGD sgd(net->parameters(), 0.05f, 0.9f);
    for (int i = 0; i < 5; ++i) {
      train(*net, sgd, x, y, 1);
      losses.push_back(mean_loss(*net, x, y));
    }
    return losses;
  };
  const std::vector<float> first = trajectory();
  EXPECT_EQ(trajectory(), first);
  EXPECT_LT(first.back(), first.front());
}

// Gluon's SGD, written out on the host in double:
//   g' = g / batch_size + wd·w
//   momentum == 0:  w -= lr·g'
//   otherwise:      m = momentum·m − lr·g';  w += m
TEST_P(Training, SgdStepMatchesTheReferenceUpdate) {
  struct Case {
    float momentum, wd;
  };
  const float lr = 0.1f;
  const int64_t batch = 4;
  for (Case c : {Case{0.f, 0.f}, Case{0.f, 0.1f}, Case{0.9f, 0.f}, Case{0.9f, 0.1f}}) {
    SCOPED_TRACE("momentum " + std::to_string(c.momentum) + ", weight decay " + std::to_string(c.wd));
    manual_seed(12);
    Tensor x = randn({batch, 3}, dev()), y = randn({batch, 2}, dev());
    Dense layer(2);
    {
      NoGradGuard ng;
      layer(x);
    }
    std::vector<Parameter*> ps = layer.parameters();
    SGD sgd(ps, lr, c.momentum, c.wd);
    std::vector<std::vector<double>> w, m;  // the reference's weights and momentum, per parameter
    for (Parameter* p : ps) {
      std::vector<float> v = p->value.to_host();
      w.emplace_back(v.begin(), v.end());
      m.emplace_back(v.size(), 0.0);
    }
    for (int step = 0; step < 3; ++step) {  // the momentum buffer carries over
      Tensor loss = l2_loss(layer(x), y);
      loss.backward();
      std::vector<std::vector<float>> g;
      for (Parameter* p : ps) g.push_back(p->value.grad().to_host());
      sgd.step(batch);
      for (size_t k = 0; k < ps.size(); ++k) {
        const std::vector<float> got = ps[k]->value.to_host();
        for (size_t i = 0; i < got.size(); ++i) {
          const double gp = g[k][i] / double(batch) + c.wd * w[k][i];
          if (c.momentum == 0.f) {
            w[k][i] -= lr * gp;
          } else {
            m[k][i] = c.momentum * m[k][i] - lr * gp;
            w[k][i] += m[k][i];
          }
          EXPECT_NEAR(got[i], w[k][i], 1e-6 * (1 + std::abs(w[k][i]))) << ps[k]->name << "[" << i << "], step " << step;
        }
      }
    }
  }
}

TEST_P(Training, SgdRejectsBadArguments) {
  Dense layer(2);
  EXPECT_THROW(SGD(layer.parameters(), 0.1f), Error);  // not initialised: no parameters yet
  Tensor x = ones({2, 3}, dev());
  {
    NoGradGuard ng;
    layer(x);
  }
  EXPECT_THROW(SGD(layer.parameters(), 0.f), Error);
  EXPECT_THROW(SGD(layer.parameters(), 0.1f, 1.f), Error);
  SGD sgd(layer.parameters(), 0.1f);
  EXPECT_THROW(sgd.step(4), Error);  // no backward yet: no gradient
  l2_loss(layer(x), zeros({2, 2}, dev())).backward();
  EXPECT_THROW(sgd.step(0), Error);
  EXPECT_NO_THROW(sgd.step(2));
}

// SGD::step is one op for every parameter on a device (one launch on a
// GPU): a three-layer MLP's six parameters cost one push, not six.
TEST_P(Training, SgdStepIsOneOpForEveryParameter) {
  manual_seed(5);
  Tensor x = randn({8, 6}, dev()), y = randn({8, 1}, dev());
  auto net = models::make_mlp(models::LayerSpec{{5, 4}}, 1);
  (void)mean_loss(*net, x, y);  // initialises the layers
  SGD sgd(net->parameters(), 0.01f, 0.9f);
  ASSERT_EQ(net->parameters().size(), 6u);
  l2_loss((*net)(x), y).backward();
  waitall();
  const uint64_t before = queue_stats(dev()).pushed;
  sgd.step(x.dim(0));
  EXPECT_EQ(queue_stats(dev()).pushed - before, 1u);
  waitall();
}

// A Dense MLP's training step (forward, loss, backward, update) is ten ops
// on every device, one kernel launch each on a GPU (cuBLASLt epilogues):
// three Dense forwards with their bias and ReLU; the loss, which writes its
// own gradient for the head of ones; the output layer's input gradient
// through the ReLU below it, with that layer's bias gradient, in one op
// (linear_grad_input_relu) and its own weight and bias gradients in another;
// the middle layer the same; the first layer's weight gradient (its input
// needs none); one SGD update. Two ops fewer than with a ReLU backward of
// its own per hidden layer (relu_backward_sum_rows), which a Dense's input
// that no linear_relu made still takes.
TEST_P(Training, ADenseStepIsTenOps) {
  manual_seed(5);
  Tensor x = randn({8, 6}, dev()), y = ones({8}, dev());
  auto net = models::make_mlp(models::LayerSpec{{5, 4}}, 1);
  (void)mean_loss(*net, x, y);  // initialises the layers
  SGD sgd(net->parameters(), 0.01f);
  waitall();
  const uint64_t before = queue_stats(dev()).pushed;
  Tensor l = l2_loss((*net)(x), y);
  EXPECT_EQ(queue_stats(dev()).pushed - before, 4u) << "forward: three Dense and the loss";
  l.backward();
  EXPECT_EQ(queue_stats(dev()).pushed - before, 9u) << "backward: 2 + 2 + 1 ops";
  sgd.step(x.dim(0));
  EXPECT_EQ(queue_stats(dev()).pushed - before, 10u);
  waitall();
}

// Where a hidden layer's output has two consumers, their gradients meet in
// an add and the ReLU's backward runs on the sum (relu_backward_sum_rows):
// a consumer's masked gradient is still a right one to add. The parameters'
// gradients match the unfused chain's (relu(linear())) to rounding (the
// bias gradient's sums run in another kernel).
TEST_P(Training, AReluOutputWithTwoConsumersTrainsLikeTheUnfusedChain) {
  std::vector<std::vector<float>> grads[2];
  for (int fused : {0, 1}) {
    manual_seed(3);
    Tensor x = randn({8, 6}, dev());
    Tensor w1 = randn({5, 6}, dev()).requires_grad_(), b1 = randn({5}, dev()).requires_grad_();
    Tensor w2 = randn({3, 5}, dev()).requires_grad_(), w3 = randn({2, 5}, dev()).requires_grad_();
    Tensor h = fused ? linear_relu(x, w1, b1) : relu(linear(x, w1, b1));
    add(sum(linear(h, w2, Tensor())), sum(linear(h, w3, Tensor()))).backward();
    for (const Tensor* t : {&w1, &b1, &w2, &w3}) grads[fused].push_back(t->grad().to_host());
  }
  for (size_t i = 0; i < grads[0].size(); ++i) {
    SCOPED_TRACE("parameter " + std::to_string(i));
    ASSERT_EQ(grads[0][i].size(), grads[1][i].size());
    for (size_t j = 0; j < grads[0][i].size(); ++j)
      EXPECT_NEAR(grads[1][i][j], grads[0][i][j], 1e-5f * (1.f + std::fabs(grads[0][i][j]))) << j;
  }
}

// Tensor::backward's head of ones is never made for a loss that writes its
// own unit gradient: two ops fewer (the ones, the loss's backward) than an
// explicit head of ones, and the same gradients, bitwise.
TEST_P(Training, AUnitHeadGivesTheExplicitHeadsGradientsBitwise) {
  std::vector<std::vector<float>> grads[2];
  uint64_t ops[2];
  for (int explicit_head = 0; explicit_head < 2; ++explicit_head) {
    manual_seed(9);
    Tensor x = randn({16, 6}, dev()), y = randn({16, 1}, dev());
    auto net = models::make_mlp(models::LayerSpec{{5}}, 1);
    (void)mean_loss(*net, x, y);
    waitall();
    Tensor l = l2_loss((*net)(x), y);
    const uint64_t before = queue_stats(dev()).pushed;
    if (explicit_head)
      backward(l, ones(l.shape(), dev()));
    else
      l.backward();
    ops[explicit_head] = queue_stats(dev()).pushed - before;
    for (Parameter* p : net->parameters()) grads[explicit_head].push_back(p->value.grad().to_host());
  }
  EXPECT_EQ(ops[1] - ops[0], 2u) << "unit head " << ops[0] << " ops, explicit ones " << ops[1];
  ASSERT_EQ(grads[0].size(), grads[1].size());
  for (size_t i = 0; i < grads[0].size(); ++i) {
    ASSERT_EQ(grads[0][i].size(), grads[1][i].size());
    EXPECT_EQ(std::memcmp(grads[0][i].data(), grads[1][i].data(), grads[0][i].size() * sizeof(float)), 0)
        << "parameter " << i;
  }
}

// backward() from a root whose op has no unit gradient (sum), and from a
// leaf, still starts from ones.
TEST_P(Training, AUnitHeadWithoutAFusedLossIsOnes) {
  Tensor w = from_host({2, 2}, std::vector<float>{1, 2, 3, 4}.data(), dev()).requires_grad_();
  scale(w, 3.f).backward();
  EXPECT_EQ(w.grad().to_host(), (std::vector<float>{3, 3, 3, 3}));
  Tensor v = from_host({3}, std::vector<float>{1, 2, 3}.data(), dev()).requires_grad_();
  v.backward();
  EXPECT_EQ(v.grad().to_host(), (std::vector<float>{1, 1, 1}));
}

INSTANTIATE_TEST_SUITE_P(Devices, Training, ::testing::ValuesIn(test_devices()), device_name);

}  // namespace
}  // namespace amlp::testing
