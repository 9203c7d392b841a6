// Covers framework/ops/optimizer.cpp, framework/cpu/optimizer.cpp, framework/cuda/optimizer.cu (sgd_update_multi_).
// sgd_update_multi_, every parameter's SGD step as one
// op (one launch on CUDA): bitwise the per-parameter sgd_update_ on each
// device the machine has (cpu:0; cuda:0 on a GPU), with and without momentum,
// over more parameters than one CUDA launch takes and chunks of every length;
// and the CUDA result bitwise the CPU's. Bad lists throw and queue nothing.
#include "test_util.h"

namespace amlp::testing {
namespace {

// 30 parameters (a CUDA launch takes 24), sizes across the kernel's 4096-element chunks.
const std::vector<int64_t> kSizes = {1,  7,   4095, 4096, 4097, 1, 512, 2048, 9000, 3, 64, 1, 100, 8192, 5,
                                     33, 777, 2,    1,    4096, 6, 10,  20,   40,   80, 1, 2, 3,   4,    12289};

struct Params {
  std::vector<Tensor> w, g, m;
};

Params make(Device d, bool momentum, uint32_t seed) {
  std::mt19937 rng(seed);
  Params p;
  for (int64_t n : kSizes) {
    auto v = uniform_values(rng, n);
    p.w.push_back(from_host({n}, v.data(), d));
    v = uniform_values(rng, n);
    p.g.push_back(from_host({n}, v.data(), d));
    v = uniform_values(rng, n, -0.1f, 0.1f);
    p.m.push_back(momentum ? from_host({n}, v.data(), d) : Tensor());
  }
  return p;
}

std::vector<std::vector<float>> values(const std::vector<Tensor>& ts) {
  std::vector<std::vector<float>> out;
  for (const Tensor& t : ts) out.push_back(t.defined() ? t.to_host() : std::vector<float>{});
  return out;
}

void step_multi(Params& p, float momentum) {
  std::vector<Tensor*> ws, ms;
  std::vector<const Tensor*> gs;
  for (size_t i = 0; i < p.w.size(); ++i) {
    ws.push_back(&p.w[i]);
    gs.push_back(&p.g[i]);
    if (momentum != 0.f) ms.push_back(&p.m[i]);
  }
  sgd_update_multi_(ws, gs, ms, 0.05f, momentum, 1e-3f, 1.f / 64);
}

void step_each(Params& p, float momentum) {
  for (size_t i = 0; i < p.w.size(); ++i) sgd_update_(p.w[i], p.g[i], p.m[i], 0.05f, momentum, 1e-3f, 1.f / 64);
}

class SgdMulti : public DeviceTest {};

TEST_P(SgdMulti, IsBitwiseThePerParameterUpdate) {
  for (float momentum : {0.f, 0.9f}) {
    Params fused = make(dev(), momentum != 0.f, 11), each = make(dev(), momentum != 0.f, 11);
    for (int step = 0; step < 3; ++step) {
      step_multi(fused, momentum);
      step_each(each, momentum);
    }
    EXPECT_EQ(values(fused.w), values(each.w)) << "momentum " << momentum;
    EXPECT_EQ(values(fused.m), values(each.m)) << "momentum " << momentum;
  }
}

TEST_P(SgdMulti, IsOneOp) {
  Params p = make(dev(), true, 3);
  waitall();
  const uint64_t before = queue_stats(dev()).pushed;
  step_multi(p, 0.9f);
  EXPECT_EQ(queue_stats(dev()).pushed, before + 1);
}

TEST_P(SgdMulti, BadListsThrowAndQueueNothing) {
  Params p = make(dev(), false, 5);
  waitall();
  const uint64_t before = queue_stats(dev()).pushed;
  std::vector<Tensor*> ws{&p.w[0], &p.w[1]};
  std::vector<const Tensor*> gs{&p.g[0]};
  EXPECT_THROW(sgd_update_multi_(ws, gs, {}, 0.1f, 0.f, 0.f, 1.f), Error);
  gs = {&p.g[1], &p.g[0]};  // shapes swapped
  EXPECT_THROW(sgd_update_multi_(ws, gs, {}, 0.1f, 0.f, 0.f, 1.f), ShapeError);
  gs = {&p.g[0], &p.g[1]};
  EXPECT_THROW(sgd_update_multi_(ws, gs, {}, 0.1f, 0.9f, 0.f, 1.f), ShapeError);  // momentum without buffers
  EXPECT_THROW(sgd_update_multi_({}, {}, {}, 0.1f, 0.f, 0.f, 1.f), Error);
  EXPECT_EQ(queue_stats(dev()).pushed, before);
}

INSTANTIATE_TEST_SUITE_P(Devices, SgdMulti, ::testing::ValuesIn(test_devices()), device_name);

TEST(SgdMultiCuda, IsBitwiseTheCpus) {
  SKIP_WITHOUT_GPU();
  for (float momentum : {0.f, 0.9f}) {
    Params gpu = make(Device::cuda(0), momentum != 0.f, 7), cpu = make(Device::cpu(0), momentum != 0.f, 7);
    step_multi(gpu, momentum);
    step_multi(cpu, momentum);
    EXPECT_EQ(values(gpu.w), values(cpu.w)) << "momentum " << momentum;
    EXPECT_EQ(values(gpu.m), values(cpu.m)) << "momentum " << momentum;
  }
}

}  // namespace
}  // namespace amlp::testing
