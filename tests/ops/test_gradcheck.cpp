// Covers framework/ops/elementwise.cpp, framework/ops/linalg.cpp, framework/ops/loss.cpp (their backward functions), framework/nn/autograd.cpp, framework/nn/dense.cpp.
// every op with a backward, the Dense layer and the whole
// MLP against central finite differences over the full Jacobian (see
// gradcheck.h for the method, the step and the tolerances), on several random
// shapes drawn from fixed seeds; and the checker's own test: it must fail a
// gradient that is wrong.
#include <functional>
#include <string>

#include "framework/core/tensor/tape.h"  // a hand-written op with its own backward
#include "gradcheck.h"
#include "models/mlp.h"
#include "test_util.h"

namespace amlp::testing {
namespace {

constexpr uint32_t kSeeds[] = {11, 22, 33};  // three random shapes per case

std::string dims(std::initializer_list<int64_t> ds) {
  std::string s;
  for (int64_t d : ds) s += (s.empty() ? "" : "x") + std::to_string(d);
  return s;
}

class GradCheck : public DeviceTest {
 protected:
  // Values uniform in [lo, hi]: outputs stay ≲ 10 for the shapes used here,
  // which keeps the finite differences' rounding error small (gradcheck.h).
  Tensor leaf(const Shape& s, std::mt19937& rng, float lo = -2.f, float hi = 2.f) {
    return make_leaf(s, uniform_values(rng, numel(s), lo, hi), dev());
  }

  // Checks every leaf's Jacobian with all leaves requiring a gradient, then
  // each leaf alone (the others not requiring one), which also runs the
  // "only this input needs a gradient" branch of every backward. Returns
  // false, checking nothing, when the point is too close to a ReLU kink.
  static bool expect_gradients(const std::function<Tensor()>& f, std::vector<Leaf> leaves,
                               const Region& region = nullptr) {
    GradCheckReport all = check_gradients(f, leaves, {}, region);
    if (all.kink_crossed) return false;
    EXPECT_TRUE(all.ok()) << all.summary();
    if (leaves.size() < 2) return true;
    for (size_t k = 0; k < leaves.size(); ++k) {
      for (size_t i = 0; i < leaves.size(); ++i) leaves[i].t.requires_grad_(i == k);
      GradCheckReport alone = check_gradients(f, {leaves[k]}, {}, region);
      EXPECT_TRUE(alone.ok()) << "only " << leaves[k].name << " requires a gradient:\n" << alone.summary();
    }
    for (Leaf& l : leaves) l.t.requires_grad_(true);
    return true;
  }
};

TEST_P(GradCheck, MatmulAllTransposes) {
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (uint32_t seed : kSeeds) {
        std::mt19937 rng(seed);
        const int64_t M = uniform_int(rng, 1, 4), K = uniform_int(rng, 1, 4), N = uniform_int(rng, 1, 4);
        SCOPED_TRACE("op(a) " + dims({M, K}) + ", op(b) " + dims({K, N}) + (ta ? ", a transposed" : "") +
                     (tb ? ", b transposed" : ""));
        Tensor a = leaf(ta ? Shape{K, M} : Shape{M, K}, rng);  // a: (M,K) or (K,M)
        Tensor b = leaf(tb ? Shape{N, K} : Shape{K, N}, rng);  // b: (K,N) or (N,K)
        expect_gradients([&] { return matmul(a, b, ta, tb); }, {{"a", a}, {"b", b}});
      }
}

TEST_P(GradCheck, BiasAdd) {
  for (uint32_t seed : kSeeds) {
    std::mt19937 rng(seed);
    const int64_t B = uniform_int(rng, 1, 4), C = uniform_int(rng, 1, 5);
    SCOPED_TRACE("x " + dims({B, C}));
    Tensor x = leaf({B, C}, rng), b = leaf({C}, rng);
    expect_gradients([&] { return bias_add(x, b); }, {{"x", x}, {"bias", b}});
  }
}

TEST_P(GradCheck, LinearWithAndWithoutBias) {
  for (bool with_bias : {true, false})
    for (uint32_t seed : kSeeds) {
      std::mt19937 rng(seed);
      const int64_t B = uniform_int(rng, 1, 4), in = uniform_int(rng, 1, 4), out = uniform_int(rng, 1, 4);
      SCOPED_TRACE("x " + dims({B, in}) + ", W " + dims({out, in}) + (with_bias ? ", with bias" : ", no bias"));
      Tensor x = leaf({B, in}, rng), w = leaf({out, in}, rng), b = with_bias ? leaf({out}, rng) : Tensor();
      std::vector<Leaf> leaves{{"x", x}, {"weight", w}};
      if (with_bias) leaves.push_back({"bias", b});
      expect_gradients([&] { return linear(x, w, b); }, leaves);
    }
}

// Signs of a tensor's values: the region a ReLU of it is linear in.
Region signs_of(const std::function<Tensor()>& pre) {
  return [pre] {
    NoGradGuard ng;
    std::vector<bool> s;
    for (float v : pre().to_host()) s.push_back(v > 0.f);
    return s;
  };
}

TEST_P(GradCheck, ReluAwayFromTheKink) {
  const float margin = 0.1f;  // 10 h: no perturbation can reach 0
  for (uint32_t seed : kSeeds) {
    std::mt19937 rng(seed);
    const int64_t R = uniform_int(rng, 1, 4), C = uniform_int(rng, 1, 5);
    std::vector<float> v = uniform_values(rng, R * C, -2.f, 2.f);
    for (float& e : v)
      while (std::abs(e) < margin) e = uniform_values(rng, 1, -2.f, 2.f)[0];  // resample near 0
    Tensor x = make_leaf({R, C}, v, dev());
    SCOPED_TRACE("x " + dims({R, C}));
    EXPECT_TRUE(expect_gradients([&] { return relu(x); }, {{"x", x}}, signs_of([x] { return x; })));
  }
}

TEST_P(GradCheck, L2LossBothLabelShapes) {
  for (bool vector_label : {false, true})  // label (B, C), or (B) with C = 1
    for (uint32_t seed : kSeeds) {
      std::mt19937 rng(seed);
      const int64_t B = uniform_int(rng, 1, 4), C = vector_label ? 1 : uniform_int(rng, 1, 4);
      SCOPED_TRACE("pred " + dims({B, C}) + (vector_label ? ", label (B)" : ", label (B, C)"));
      Tensor pred = leaf({B, C}, rng), label = leaf(vector_label ? Shape{B} : Shape{B, C}, rng);
      expect_gradients([&] { return l2_loss(pred, label); }, {{"pred", pred}, {"label", label}});
    }
}

TEST_P(GradCheck, Elementwise) {
  for (uint32_t seed : kSeeds) {
    std::mt19937 rng(seed);
    const int64_t R = uniform_int(rng, 1, 3), C = uniform_int(rng, 1, 4);
    SCOPED_TRACE("shape " + dims({R, C}));
    Tensor a = leaf({R, C}, rng), b = leaf({R, C}, rng);
    const float s = uniform_values(rng, 1, -3.f, 3.f)[0];
    expect_gradients([&] { return add(a, b); }, {{"a", a}, {"b", b}});
    expect_gradients([&] { return sub(a, b); }, {{"a", a}, {"b", b}});
    expect_gradients([&] { return mul(a, b); }, {{"a", a}, {"b", b}});
    expect_gradients([&] { return mul(a, a); }, {{"a", a}});  // both factors one tensor
    expect_gradients([&] { return scale(a, s); }, {{"a", a}});
    expect_gradients([&] { return add_scalar(a, s); }, {{"a", a}});
    // One tensor used twice: backward must accumulate, not overwrite.
    expect_gradients([&] { return add(scale(a, s), sub(a, b)); }, {{"a", a}, {"b", b}});
  }
}

TEST_P(GradCheck, SumAndMean) {
  const Shape shapes[] = {{}, {5}, {3, 4}, {1, 7}};
  for (const Shape& shape : shapes) {
    std::mt19937 rng(static_cast<uint32_t>(numel(shape)));
    SCOPED_TRACE("shape " + shape_str(shape));
    Tensor a = leaf(shape, rng);
    expect_gradients([&] { return sum(a); }, {{"a", a}});
    expect_gradients([&] { return mean(a); }, {{"a", a}});
  }
}

// Gives every parameter of `net` (already initialised) values uniform in
// ±`scale` and returns the leaves: x, then each Dense's weight and bias.
std::vector<Leaf> randomise(Sequential& net, const Tensor& x, std::mt19937& rng, float scale) {
  std::vector<Leaf> leaves{{"x", x}};
  for (size_t i = 0; i < net.size(); ++i)
    for (Parameter* p : net[i].parameters()) {
      detail_gc::write(p->value, uniform_values(rng, p->value.numel(), -scale, scale));
      leaves.push_back({"dense" + std::to_string(i) + "." + p->name, p->value});
    }
  return leaves;
}

// Every hidden ReLU's input, recomputed from the layers' parameters.
std::vector<float> hidden_preactivations(Sequential& net, const Tensor& x) {
  NoGradGuard ng;
  std::vector<float> z;
  Tensor h = x;
  for (size_t i = 0; i + 1 < net.size(); ++i) {  // the last Dense has no activation
    std::vector<Parameter*> ps = net[i].parameters();
    Tensor pre = linear(h, ps[0]->value, ps[1]->value);
    for (float v : pre.to_host()) z.push_back(v);
    h = relu(pre);
  }
  return z;
}

// A Dense layer, with and without its ReLU: input, weight and bias, each checked separately.
TEST_P(GradCheck, DenseInputWeightBias) {
  for (Activation act : {Activation::None, Activation::ReLU})
    for (uint32_t seed : kSeeds) {
      std::mt19937 rng(seed);
      const int64_t B = uniform_int(rng, 1, 3), in = uniform_int(rng, 1, 4), units = uniform_int(rng, 1, 4);
      SCOPED_TRACE("x " + dims({B, in}) + ", units " + std::to_string(units) +
                   (act == Activation::ReLU ? ", relu" : ""));
      bool checked = false;
      for (int attempt = 0; attempt < 50 && !checked; ++attempt) {  // resample points near a kink
        Dense dense(units, act);
        Tensor x = leaf({B, in}, rng, -1.f, 1.f);
        {
          NoGradGuard ng;
          dense(x);  // deferred initialisation
        }
        std::vector<Parameter*> ps = dense.parameters();
        std::vector<Leaf> leaves{{"x", x}};
        for (Parameter* p : ps) {
          detail_gc::write(p->value, uniform_values(rng, p->value.numel(), -1.f, 1.f));
          leaves.push_back({p->name, p->value});
        }
        Region region;
        if (act == Activation::ReLU) region = signs_of([&] { return linear(x, ps[0]->value, ps[1]->value); });
        checked = expect_gradients([&] { return dense(x); }, leaves, region);
      }
      EXPECT_TRUE(checked) << "no test point away from the ReLU kinks in 50 tries";
    }
}

// A layer over a Dense with ReLU, where the upper layer's input gradient
// carries the ReLU's backward and the lower bias's gradient
// (linear_grad_input_relu): under a linear and under another linear_relu,
// every leaf together and each alone (a lower bias alone takes only the
// fused op's sum; x alone, the mask through two layers).
TEST_P(GradCheck, ALayerOverADenseReluThroughTheFusedBackward) {
  for (bool upper_relu : {false, true})
    for (uint32_t seed : kSeeds) {
      std::mt19937 rng(seed);
      const int64_t B = uniform_int(rng, 1, 3), in = uniform_int(rng, 1, 4), mid = uniform_int(rng, 1, 5),
                    out = uniform_int(rng, 1, 3);
      SCOPED_TRACE("x " + dims({B, in}) + ", " + std::to_string(mid) + " then " + std::to_string(out) + " units" +
                   (upper_relu ? ", both relu" : ""));
      bool checked = false;
      for (int attempt = 0; attempt < 50 && !checked; ++attempt) {
        Tensor x = leaf({B, in}, rng, -1.f, 1.f), w1 = leaf({mid, in}, rng, -1.f, 1.f),
               b1 = leaf({mid}, rng, -1.f, 1.f), w2 = leaf({out, mid}, rng, -1.f, 1.f),
               b2 = leaf({out}, rng, -1.f, 1.f);
        auto f = [&] {
          Tensor h = linear_relu(x, w1, b1);
          return upper_relu ? linear_relu(h, w2, b2) : linear(h, w2, b2);
        };
        Region region = [&] {
          NoGradGuard ng;
          std::vector<bool> s;
          Tensor z1 = linear(x, w1, b1);
          for (float z : z1.to_host()) s.push_back(z > 0.f);
          if (upper_relu)
            for (float z : linear(relu(z1), w2, b2).to_host()) s.push_back(z > 0.f);
          return s;
        };
        checked = expect_gradients(f, {{"x", x}, {"w1", w1}, {"b1", b1}, {"w2", w2}, {"b2", b2}}, region);
      }
      EXPECT_TRUE(checked) << "no test point away from the ReLU kinks in 50 tries";
    }
}

// The whole d2l-shaped MLP (make_mlp) with its loss: x and every layer's weight and bias.
TEST_P(GradCheck, WholeMlpWithLoss) {
  for (uint32_t seed : kSeeds) {
    std::mt19937 rng(seed);
    const int64_t B = uniform_int(rng, 1, 3), in = uniform_int(rng, 2, 4);
    const models::LayerSpec spec{{uniform_int(rng, 2, 5), uniform_int(rng, 2, 4)}};
    SCOPED_TRACE("x " + dims({B, in}) + ", hidden " + models::to_string(spec));
    bool checked = false;
    for (int attempt = 0; attempt < 50 && !checked; ++attempt) {
      auto net = models::make_mlp(spec, 1);
      Tensor x = leaf({B, in}, rng, -1.f, 1.f);
      Tensor label = make_leaf({B}, uniform_values(rng, B), dev()).requires_grad_(false);
      {
        NoGradGuard ng;
        (*net)(x);  // deferred initialisation
      }
      std::vector<Leaf> leaves = randomise(*net, x, rng, 0.8f);
      // Cheap pre-filter; the region check below is what guarantees it.
      bool near_kink = false;
      for (float z : hidden_preactivations(*net, x)) near_kink |= std::abs(z) < 0.05f;
      if (near_kink) continue;
      Region region = [&] {
        std::vector<bool> s;
        for (float z : hidden_preactivations(*net, x)) s.push_back(z > 0.f);
        return s;
      };
      GradCheckReport r = check_gradients([&] { return l2_loss((*net)(x), label); }, leaves, {}, region);
      if (r.kink_crossed) continue;
      checked = true;
      ASSERT_EQ(r.leaves.size(), 1 + 2 * net->size());  // x, then weight and bias of each Dense
      for (const LeafReport& l : r.leaves) EXPECT_TRUE(l.ok) << l.leaf << ": " << l.detail;
    }
    EXPECT_TRUE(checked) << "no test point away from the ReLU kinks in 50 tries";
  }
}

// --- the checker's own test ------------------------------------------------------

// y = a·b with a hand-written backward: what an op with a broken backward
// looks like to the checker.
using MatmulBackward = std::function<std::vector<Tensor>(const Tensor& a, const Tensor& b, const Tensor& g)>;

Tensor matmul_with_backward(const Tensor& a, const Tensor& b, MatmulBackward bw) {
  Tensor y;
  {
    NoGradGuard ng;
    y = matmul(a, b);
  }
  if (amlp::detail::any_requires_grad({&a, &b}))
    amlp::detail::record(y, "matmul_custom", {a, b}, [a, b, bw](const Tensor& g) { return bw(a, b, g); });
  return y;
}

struct BackwardCase {
  const char* name;
  MatmulBackward bw;
  bool a_ok, b_ok;  // which leaves the checker must pass
};

// g: (M, N).  The right gradients: da = g·bᵀ (M,K), db = aᵀ·g (K,N).
Tensor right_da(const Tensor& b, const Tensor& g) { return matmul(g, b, false, /*transpose_b=*/true); }
Tensor right_db(const Tensor& a, const Tensor& g) { return matmul(a, g, /*transpose_a=*/true, false); }

TEST_P(GradCheck, CheckerCatchesWrongGradients) {
  using Grads = std::vector<Tensor>;
  const BackwardCase cases[] = {
      {"correct (control)", [](auto& a, auto& b, auto& g) { return Grads{right_da(b, g), right_db(a, g)}; },
       true, true},
      {"db off by 1%", [](auto& a, auto& b, auto& g) { return Grads{right_da(b, g), scale(right_db(a, g), 1.01f)}; },
       true, false},
      {"da sign flipped, db missing", [](auto&, auto& b, auto& g) { return Grads{scale(right_da(b, g), -1.f), {}}; },
       false, false},
      {"db missing", [](auto&, auto& b, auto& g) { return Grads{right_da(b, g), Tensor()}; }, true, false},
      {"da with b untransposed", [](auto& a, auto& b, auto& g) { return Grads{matmul(g, b), right_db(a, g)}; },
       false, true},
  };
  std::mt19937 rng(7);
  Tensor a = leaf({3, 3}, rng), b = leaf({3, 3}, rng);  // square: every wrong gradient has the right shape
  for (const BackwardCase& c : cases) {
    SCOPED_TRACE(c.name);
    GradCheckReport r = check_gradients([&] { return matmul_with_backward(a, b, c.bw); }, {{"a", a}, {"b", b}});
    ASSERT_EQ(r.leaves.size(), 2u);
    EXPECT_EQ(r.leaves[0].ok, c.a_ok) << r.summary();
    EXPECT_EQ(r.leaves[1].ok, c.b_ok) << r.summary();
    EXPECT_EQ(r.ok(), c.a_ok && c.b_ok);
  }
}

TEST_P(GradCheck, CheckerFlagsAPointNearAKink) {
  Tensor x = make_leaf({3}, {1.f, -0.004f, -1.f}, dev());  // within h of ReLU's kink
  GradCheckReport r = check_gradients([&] { return relu(x); }, {{"x", x}}, {}, signs_of([x] { return x; }));
  EXPECT_TRUE(r.kink_crossed);
  EXPECT_FALSE(r.ok());
}

INSTANTIATE_TEST_SUITE_P(Devices, GradCheck, ::testing::ValuesIn(test_devices()), device_name);

}  // namespace
}  // namespace amlp::testing
