// Covers framework/nn/data_parallel.cpp, framework/nn/autograd.cpp (BackwardPassOrder).
// one replica per device, gradients all-reduced by
// queued ops: replicas stay bitwise identical, training on two CPU devices
// follows training on one (same seed, same data, the batch split), the
// reduced gradient is the whole batch's (f64 finite differences through the
// reduction), the backward pass hands over each layer's gradient as soon as it
// is queued (last layer first), and bad input is refused before anything runs.
#include <cfloat>
#include <cmath>
#include <cstring>

#include "models/mlp.h"
#include "nn/one_network.h"
#include "test_util.h"

namespace amlp::testing {
namespace {

const models::LayerSpec kSpec{{32, 16}};
constexpr int64_t kFeatures = 12;

std::unique_ptr<Block> make_net() { return models::make_mlp(kSpec); }

std::vector<Device> cpus(int n) {
  std::vector<Device> ds;
  for (int i = 0; i < n; ++i) ds.push_back(Device::cpu(i));
  return ds;
}

// Every replica's parameters, read back: [replica][parameter] → values.
std::vector<std::vector<std::vector<float>>> read_replicas(DataParallel& dp) {
  std::vector<std::vector<std::vector<float>>> out;
  for (size_t i = 0; i < dp.size(); ++i) {
    out.emplace_back();
    for (Parameter* p : dp.parameters(i)) out.back().push_back(p->value.to_host());
  }
  return out;
}

bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// One step of data-parallel training on a batch drawn on the first device;
// returns the batch's mean loss (read: blocks).
float dp_step(DataParallel& dp, std::vector<SGD>& sgds, int64_t batch) {
  Tensor X = randn({batch, kFeatures}, dp.devices()[0]), y = ones({batch}, dp.devices()[0]);
  const std::vector<Tensor> xs = dp.scatter(X), ys = dp.scatter(y);
  std::vector<Tensor> ls;
  L2Loss loss;
  for (size_t i = 0; i < dp.size(); ++i) ls.push_back(loss(dp.replica(i)(xs[i]), ys[i]));
  dp.backward(ls);
  for (SGD& s : sgds) {
    s.step(batch);
    s.zero_grad();
  }
  return dp.mean(ls).item();
}

// Writes `values` into parameter k of every replica (they move together).
void write_all(DataParallel& dp, size_t k, const std::vector<float>& values) {
  NoGradGuard ng;
  for (size_t i = 0; i < dp.size(); ++i) {
    Tensor& w = dp.parameters(i)[k]->value;
    copy_(w, from_host(w.shape(), values.data(), w.device()));
  }
}

std::vector<SGD> sgds_for(DataParallel& dp, float lr) {
  std::vector<SGD> s;
  for (size_t i = 0; i < dp.size(); ++i) s.emplace_back(dp.parameters(i), lr);
  return s;
}

TEST(DataParallel, SplitGivesTheFirstRowsTheRemainder) {
  manual_seed(1);
  DataParallel dp(cpus(3), make_net, kFeatures);
  EXPECT_EQ(dp.split(9), (std::vector<int64_t>{3, 3, 3}));
  EXPECT_EQ(dp.split(8), (std::vector<int64_t>{3, 3, 2}));
  EXPECT_EQ(dp.split(3), (std::vector<int64_t>{1, 1, 1}));
  EXPECT_THROW(dp.split(2), ShapeError);
}

TEST(DataParallel, ScatterHandsEachDeviceItsRows) {
  manual_seed(1);
  DataParallel dp(cpus(2), make_net, kFeatures);
  std::vector<float> v(5 * 3);
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(i);
  const std::vector<Tensor> parts = dp.scatter(from_host({5, 3}, v.data(), Device::cpu(0)));
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].device(), Device::cpu(0));
  EXPECT_EQ(parts[1].device(), Device::cpu(1));
  EXPECT_EQ(parts[0].shape(), (Shape{3, 3}));
  EXPECT_EQ(parts[1].shape(), (Shape{2, 3}));
  EXPECT_EQ(parts[0].to_host(), std::vector<float>(v.begin(), v.begin() + 9));
  EXPECT_EQ(parts[1].to_host(), std::vector<float>(v.begin() + 9, v.end()));
}

// The broadcast draws nothing: replica 0 has the weights a single network
// gets from the same seed, and the stream is where a single network leaves it.
TEST(DataParallel, ReplicasStartWithTheSingleNetworksWeightsAndDrawNothingMore) {
  manual_seed(7);
  auto single = make_net();
  {
    NoGradGuard ng;
    single->forward(zeros({1, kFeatures}, Device::cpu(0)));
  }
  const uint64_t single_offset = random_offset();
  manual_seed(7);
  DataParallel dp(cpus(3), make_net, kFeatures);
  EXPECT_EQ(random_offset(), single_offset);
  const auto reps = read_replicas(dp);
  const std::vector<Parameter*> ps = single->parameters();
  ASSERT_EQ(reps[0].size(), ps.size());
  for (size_t k = 0; k < ps.size(); ++k)
    for (size_t i = 0; i < dp.size(); ++i) {
      EXPECT_TRUE(bitwise_equal(reps[i][k], ps[k]->value.to_host())) << "replica " << i << ", parameter " << k;
      EXPECT_EQ(dp.parameters(i)[k]->value.device(), Device::cpu(static_cast<int>(i)));
    }
}

// After every step, every replica's every parameter is bitwise the same,
// with an even split and an uneven one, unsynchronized in between.
TEST(DataParallel, ReplicasStayBitwiseIdenticalAfterEveryStep) {
  for (int n : {2, 3}) {
    SCOPED_TRACE(std::to_string(n) + " devices");
    manual_seed(11);
    DataParallel dp(cpus(n), make_net, kFeatures);
    std::vector<SGD> sgds = sgds_for(dp, 0.05f);
    for (int step = 0; step < 6; ++step) {
      dp_step(dp, sgds, 16 + step);  // 16..21 rows: even and uneven splits
      const auto reps = read_replicas(dp);
      for (size_t i = 1; i < reps.size(); ++i)
        for (size_t k = 0; k < reps[0].size(); ++k)
          ASSERT_TRUE(bitwise_equal(reps[i][k], reps[0][k])) << "step " << step << ", replica " << i << ", parameter " << k;
    }
    // And the training moved them (a reduction that dropped the gradient would
    // keep them identical too).
    manual_seed(11);
    DataParallel fresh(cpus(n), make_net, kFeatures);
    EXPECT_FALSE(bitwise_equal(read_replicas(fresh)[0][0], read_replicas(dp)[0][0]));
  }
}

// The same seed and the same data: 20 steps on cpu:0 + cpu:1 give the losses
// 20 steps on cpu:0 alone give, within 1e-5 relative.
TEST(DataParallel, TwoDevicesFollowOneDeviceOver20Steps) {
  constexpr int64_t kBatch = 64;
  constexpr int kSteps = 20;
  constexpr float kLr = 0.05f;
  const std::vector<float> one = one_network_losses(make_net, kFeatures, 5, kBatch, kSteps, kLr);
  std::vector<float> two;
  {
    manual_seed(5);
    DataParallel dp(cpus(2), make_net, kFeatures);
    std::vector<SGD> sgds = sgds_for(dp, kLr);
    for (int s = 0; s < kSteps; ++s) two.push_back(dp_step(dp, sgds, kBatch));
  }
  ASSERT_EQ(one.size(), two.size());
  for (int s = 0; s < kSteps; ++s)
    EXPECT_LE(std::abs(one[s] - two[s]), 1e-5f * std::abs(one[s])) << "step " << s << ": " << one[s] << " vs " << two[s];
  EXPECT_LT(one.back(), one.front()) << "the loss falls: the comparison is of training, not of a constant";
}

// The reduced gradient is the gradient of the whole batch's summed loss:
// analytic (dp.backward, through the all-reduce) against central differences
// of the summed loss, each weight moved in every replica at once, formed in
// double (the bound of tests/ops/gradcheck.h).
TEST(DataParallel, ReducedGradientMatchesFiniteDifferencesOnTwoDevices) {
  manual_seed(3);
  const models::LayerSpec spec{{3}};
  auto make_small = [&] { return models::make_mlp(spec); };
  for (int attempt = 0; attempt < 20; ++attempt) {
    DataParallel dp(cpus(2), make_small, 2);
    // Weights of order one (the initialiser's ±0.07 keeps every pre-activation
    // within 0.1 of the kink), the same in both replicas.
    std::mt19937 rng(static_cast<uint32_t>(attempt));
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    for (size_t k = 0; k < dp.parameters(0).size(); ++k) {
      std::vector<float> v(static_cast<size_t>(dp.parameters(0)[k]->value.numel()));
      for (float& x : v) x = u(rng);
      write_all(dp, k, v);
    }
    constexpr int64_t kBatch = 5;  // split 3 + 2
    Tensor X = randn({kBatch, 2}, Device::cpu(0)), y = randn({kBatch}, Device::cpu(0));
    const std::vector<Tensor> xs = dp.scatter(X), ys = dp.scatter(y);
    auto total = [&] {  // Σ over the whole batch of the per-sample loss, in double
      NoGradGuard ng;
      double t = 0;
      for (size_t i = 0; i < dp.size(); ++i)
        for (float v : l2_loss(dp.replica(i)(xs[i]), ys[i]).to_host()) t += v;
      return t;
    };
    // Stay away from ReLU kinks: every hidden pre-activation |z| > 0.1.
    bool near_kink = false;
    {
      NoGradGuard ng;
      Block& first = dp.replica(0);
      auto* seq = dynamic_cast<Sequential*>(&first);
      ASSERT_NE(seq, nullptr);
      Parameter* w = seq->parameters()[0];
      Parameter* b = seq->parameters()[1];
      for (float z : linear(X, w->value, b->value).to_host()) near_kink |= std::abs(z) < 0.1f;
    }
    if (near_kink) continue;
    std::vector<Tensor> ls;
    for (size_t i = 0; i < dp.size(); ++i) ls.push_back(l2_loss(dp.replica(i)(xs[i]), ys[i]));
    dp.backward(ls);
    const std::vector<Parameter*> p0 = dp.parameters(0), p1 = dp.parameters(1);
    const double y0 = total();
    for (size_t k = 0; k < p0.size(); ++k) {
      const std::vector<float> g0 = p0[k]->value.grad().to_host(), g1 = p1[k]->value.grad().to_host();
      ASSERT_TRUE(bitwise_equal(g0, g1)) << "parameter " << k << ": the replicas' reduced gradients differ";
      const std::vector<float> base = p0[k]->value.to_host();
      for (size_t j = 0; j < base.size(); ++j) {
        auto at = [&](float x) {
          std::vector<float> v = base;
          v[j] = x;
          write_all(dp, k, v);
          return total();
        };
        constexpr float h = 1e-2f;
        const float xp = base[j] + h, xm = base[j] - h;
        const double fp = at(xp), fm = at(xm);
        write_all(dp, k, base);
        const double step = double(xp) - double(xm);
        const double num = (fp - fm) / step;
        const double ana = g0[j];
        const double noise = 16 * FLT_EPSILON * std::max({std::abs(y0), std::abs(fp), std::abs(fm)}) / step;
        const double bound = 1e-5 + 1e-3 * std::max(std::abs(ana), std::abs(num)) + noise;
        EXPECT_LE(std::abs(ana - num), bound) << "parameter " << k << "[" << j << "]: analytic " << ana << ", numeric " << num;
      }
    }
    return;
  }
  FAIL() << "no test point away from the ReLU kinks in 20 tries";
}

// The pass hands over one leaf at a time, last layer first, and has queued
// only what that leaf needs: the first layer's backward comes later.
TEST(BackwardPassOrder, TheLastLayersGradientComesFirstBeforeTheFirstLayersBackwardIsQueued) {
  manual_seed(2);
  const Device d = Device::cpu(0);
  auto net = models::make_mlp(models::LayerSpec{{8, 8}});
  Tensor x = randn({4, 6}, d);
  Tensor l = l2_loss((*net)(x), ones({4}, d));
  const std::vector<Parameter*> ps = net->parameters();  // W1 b1 W2 b2 W3 b3
  BackwardPass pass(l, ones(l.shape(), d));
  std::vector<TensorImpl*> order;
  std::vector<uint64_t> pushed;
  for (Tensor leaf = pass.next_leaf(); leaf.defined(); leaf = pass.next_leaf()) {
    order.push_back(leaf.impl());
    pushed.push_back(queue_stats(d).pushed);
    EXPECT_TRUE(leaf.grad().defined());
  }
  ASSERT_EQ(order.size(), ps.size());
  // The last layer's two parameters come first, the first layer's last.
  EXPECT_TRUE((order[0] == ps[4]->value.impl() || order[0] == ps[5]->value.impl()));
  EXPECT_TRUE((order[4] == ps[0]->value.impl() || order[4] == ps[1]->value.impl()));
  // Ops were queued between the first leaf and the last: the earlier layers'
  // backward had not been queued when the last layer's gradient was handed over.
  EXPECT_LT(pushed.front(), pushed.back());
  for (Parameter* p : ps) EXPECT_TRUE(p->value.grad().defined()) << p->name;
}

TEST(DataParallel, BadInputIsRefusedBeforeAnythingRuns) {
  manual_seed(1);
  EXPECT_THROW(DataParallel({}, make_net, kFeatures), Error);
  EXPECT_THROW(DataParallel({Device::cpu(0), Device::cpu(0)}, make_net, kFeatures), DeviceError);
  try {
    DataParallel({Device::cpu(0), Device::cuda(0)}, make_net, kFeatures);
    ADD_FAILURE() << "a CPU and a CUDA device were accepted together";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("cpu:0"), std::string::npos) << e.what();
  }
  DataParallel dp(cpus(2), make_net, kFeatures);
  EXPECT_THROW(dp.backward({}), Error);
  EXPECT_THROW(dp.scatter(randn({1, kFeatures}, Device::cpu(0))), ShapeError);  // fewer rows than devices
}

}  // namespace
}  // namespace amlp::testing
