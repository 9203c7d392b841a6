// Covers framework/ops/elementwise.cpp, framework/ops/linalg.cpp, framework/ops/loss.cpp, framework/ops/reduce.cpp, framework/ops/random.cpp, framework/ops/copy.cpp, framework/ops/op.cpp, framework/core/device.cpp (parse_device).
// every op's forward values against naive double-precision
// references; creation, copies and random numbers; and the frontend's checks:
// a bad shape or a device mismatch throws at the call site, names what does
// not fit, and queues nothing.
#include <cmath>
#include <limits>
#include <functional>
#include <sstream>

#include "test_util.h"

namespace amlp::testing {
namespace {

class Ops : public DeviceTest {
 protected:
  Tensor make(const Shape& s, const std::vector<float>& v) { return from_host(s, v.data(), dev()); }
};

// float32 results against double references: a few ulps per accumulated term.
void expect_close(const std::vector<float>& got, const std::vector<double>& want, double tol = 1e-5) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], tol * (1 + std::abs(want[i]))) << "element " << i;
}

// op(a)·op(b) in double; a is (ra, ca) as stored, b is (rb, cb).
std::vector<double> naive_matmul(const std::vector<float>& a, int64_t ra, int64_t ca, bool ta,
                                 const std::vector<float>& b, int64_t rb, int64_t cb, bool tb) {
  const int64_t M = ta ? ca : ra, K = ta ? ra : ca, N = tb ? rb : cb;
  std::vector<double> y(static_cast<size_t>(M * N), 0.0);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j)
      for (int64_t k = 0; k < K; ++k) {
        const double av = ta ? a[k * ca + i] : a[i * ca + k];
        const double bv = tb ? b[j * cb + k] : b[k * cb + j];
        y[i * N + j] += av * bv;
      }
  return y;
}

TEST_P(Ops, MatmulAllTransposesMatchNaive) {
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (uint32_t seed : {1u, 2u, 3u}) {
        std::mt19937 rng(seed);
        const int64_t M = uniform_int(rng, 1, 17), K = uniform_int(rng, 1, 33), N = uniform_int(rng, 1, 17);
        SCOPED_TRACE(std::to_string(M) + "x" + std::to_string(K) + "x" + std::to_string(N) + (ta ? " ta" : "") +
                     (tb ? " tb" : ""));
        const int64_t ra = ta ? K : M, ca = ta ? M : K, rb = tb ? N : K, cb = tb ? K : N;
        const auto av = uniform_values(rng, ra * ca), bv = uniform_values(rng, rb * cb);
        Tensor y = matmul(make({ra, ca}, av), make({rb, cb}, bv), ta, tb);
        EXPECT_EQ(y.shape(), (Shape{M, N}));
        expect_close(y.to_host(), naive_matmul(av, ra, ca, ta, bv, rb, cb, tb));
      }
}

TEST_P(Ops, LinearBiasAddAndSumRowsMatchNaive) {
  std::mt19937 rng(5);
  const int64_t B = 7, in = 9, out = 5;
  const auto xv = uniform_values(rng, B * in), wv = uniform_values(rng, out * in), bv = uniform_values(rng, out);
  Tensor x = make({B, in}, xv), w = make({out, in}, wv), b = make({out}, bv);
  const std::vector<double> xw = naive_matmul(xv, B, in, false, wv, out, in, /*tb=*/true);  // (B, out)
  std::vector<double> xwb = xw, col_sums(out, 0.0);
  for (int64_t r = 0; r < B; ++r)
    for (int64_t c = 0; c < out; ++c) {
      xwb[r * out + c] += bv[c];
      col_sums[c] += xw[r * out + c];
    }
  expect_close(linear(x, w, Tensor()).to_host(), xw);
  expect_close(linear(x, w, b).to_host(), xwb);
  expect_close(bias_add(matmul(x, w, false, true), b).to_host(), xwb);
  expect_close(sum_rows(matmul(x, w, false, true)).to_host(), col_sums);
}

// The fused Dense-with-ReLU path: the forward against relu(x·Wᵀ + b) in
// double, and its gradients (through the fused mask + bias sum) against the
// unfused relu(linear()) chain's.
TEST_P(Ops, LinearReluMatchesNaiveAndTheUnfusedGradients) {
  std::mt19937 rng(6);
  const int64_t B = 33, in = 19, out = 40;
  const auto xv = uniform_values(rng, B * in), wv = uniform_values(rng, out * in), bv = uniform_values(rng, out);
  const auto gv = uniform_values(rng, B * out);
  for (bool with_bias : {true, false}) {
    SCOPED_TRACE(with_bias ? "with bias" : "no bias");
    std::vector<double> w2 = naive_matmul(xv, B, in, false, wv, out, in, true);
    for (int64_t r = 0; r < B; ++r)
      for (int64_t c = 0; c < out; ++c) w2[r * out + c] = std::max(0.0, w2[r * out + c] + (with_bias ? bv[c] : 0.0));
    std::vector<std::vector<float>> grads[2];
    for (int fused : {0, 1}) {
      Tensor x = make({B, in}, xv).requires_grad_(), w = make({out, in}, wv).requires_grad_();
      Tensor b = with_bias ? make({out}, bv).requires_grad_() : Tensor();
      Tensor y = fused ? linear_relu(x, w, b) : relu(linear(x, w, b));
      if (fused) expect_close(y.to_host(), w2);
      backward(y, make({B, out}, gv));
      grads[fused] = {x.grad().to_host(), w.grad().to_host()};
      if (with_bias) grads[fused].push_back(b.grad().to_host());
    }
    ASSERT_EQ(grads[0].size(), grads[1].size());
    for (size_t i = 0; i < grads[0].size(); ++i) {
      SCOPED_TRACE("gradient #" + std::to_string(i));
      std::vector<double> unfused(grads[0][i].begin(), grads[0][i].end());
      expect_close(grads[1][i], unfused);
    }
  }
}

TEST_P(Ops, ReluAndL2LossMatchNaive) {
  const std::vector<float> xv{-2.f, -0.f, 0.f, 1e-30f, 3.5f, -1e-30f};
  const std::vector<double> relu_ref{0, 0, 0, 1e-30, 3.5, 0};
  expect_close(relu(make({2, 3}, xv)).to_host(), relu_ref);

  std::mt19937 rng(6);
  for (int64_t C : {1, 4}) {
    SCOPED_TRACE("C = " + std::to_string(C));
    const int64_t B = 5;
    const auto pv = uniform_values(rng, B * C, -3.f, 3.f), lv = uniform_values(rng, B * C, -3.f, 3.f);
    std::vector<double> ref(B, 0.0);  // 0.5 · mean_c (pred − label)²
    for (int64_t r = 0; r < B; ++r) {
      for (int64_t c = 0; c < C; ++c) ref[r] += std::pow(double(pv[r * C + c]) - lv[r * C + c], 2);
      ref[r] *= 0.5 / double(C);
    }
    Tensor loss = l2_loss(make({B, C}, pv), make({B, C}, lv));
    EXPECT_EQ(loss.shape(), (Shape{B}));
    expect_close(loss.to_host(), ref);
    if (C == 1) expect_close(l2_loss(make({B, 1}, pv), make({B}, lv)).to_host(), ref);  // label (B)
  }
}

TEST_P(Ops, ElementwiseAndReductionsMatchNaive) {
  std::mt19937 rng(7);
  const auto av = uniform_values(rng, 12, -5.f, 5.f), bv = uniform_values(rng, 12, -5.f, 5.f);
  Tensor a = make({3, 4}, av), b = make({3, 4}, bv);
  std::vector<double> sum_ref(12), diff_ref(12), prod_ref(12), scaled(12), shifted(12);
  double total = 0;
  for (size_t i = 0; i < 12; ++i) {
    sum_ref[i] = double(av[i]) + bv[i];
    diff_ref[i] = double(av[i]) - bv[i];
    prod_ref[i] = double(av[i]) * bv[i];
    scaled[i] = double(av[i]) * -2.5;
    shifted[i] = double(av[i]) + 0.75;
    total += av[i];
  }
  expect_close(add(a, b).to_host(), sum_ref);
  expect_close(sub(a, b).to_host(), diff_ref);
  expect_close(mul(a, b).to_host(), prod_ref);
  expect_close(scale(a, -2.5f).to_host(), scaled);
  expect_close(add_scalar(a, 0.75f).to_host(), shifted);
  Tensor s = sum(a), m = mean(a);
  EXPECT_EQ(s.shape(), Shape{});
  EXPECT_EQ(m.shape(), Shape{});
  EXPECT_NEAR(s.item(), total, 1e-5 * (1 + std::abs(total)));
  EXPECT_NEAR(m.item(), total / 12, 1e-6 * (1 + std::abs(total)));
  EXPECT_EQ(mean(ones({1000}, dev())).item(), 1.f);
}

TEST_P(Ops, CreationAndHostRoundTrip) {
  EXPECT_EQ(full({2, 3}, -1.5f, dev()).to_host(), std::vector<float>(6, -1.5f));
  EXPECT_EQ(zeros({4}, dev()).to_host(), std::vector<float>(4, 0.f));
  EXPECT_EQ(ones({3, 1}, dev()).to_host(), std::vector<float>(3, 1.f));
  EXPECT_EQ(zeros({0, 3}, dev()).to_host(), std::vector<float>{});
  const std::vector<float> v{0.f, -0.f, 1.f, -3.25f, 1e-38f, 3.4e38f, 1e-45f, 123456.789f};
  Tensor t = make({2, 4}, v);
  EXPECT_EQ(t.shape(), (Shape{2, 4}));
  EXPECT_EQ(t.device(), dev());
  const std::vector<float> back = t.to_host();
  ASSERT_EQ(back.size(), v.size());
  for (size_t i = 0; i < v.size(); ++i) EXPECT_EQ(std::signbit(back[i]), std::signbit(v[i])) << i;
  EXPECT_EQ(back, v);  // bit for bit (no NaN among them)
  EXPECT_EQ(make({1}, {42.f}).item(), 42.f);
}

TEST_P(Ops, CopiesAcrossDevices) {
  const std::vector<float> v{1.f, 2.f, 3.f, 4.f, 5.f, 6.f};
  Tensor a = make({2, 3}, v);
  Tensor on_cpu1 = copy_to(a, Device::cpu(1));
  EXPECT_EQ(on_cpu1.device(), Device::cpu(1));
  EXPECT_EQ(on_cpu1.shape(), a.shape());
  EXPECT_EQ(on_cpu1.to_host(), v);
  Tensor back = copy_to(scale(on_cpu1, 2.f), dev());  // work on cpu:1, then back
  EXPECT_EQ(back.device(), dev());
  EXPECT_EQ(back.to_host(), (std::vector<float>{2, 4, 6, 8, 10, 12}));
  Tensor dst = zeros({2, 3}, dev());
  copy_(dst, a);
  EXPECT_EQ(dst.to_host(), v);
}

TEST_P(Ops, PackAndUnpackMoveManyTensorsAsOne) {
  Tensor a = make({2, 2}, {1, 2, 3, 4}), b = make({0}, {}), c = make({3}, {5, 6, 7}), d = make({}, {8});
  Tensor p = pack({a, b, c, d});
  EXPECT_EQ(p.shape(), (Shape{8}));
  EXPECT_EQ(p.device(), dev());
  EXPECT_EQ(p.to_host(), (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}));
  Tensor x = zeros({2, 2}, dev()), y = zeros({0}, dev()), z = zeros({3}, dev()), w = zeros({}, dev());
  unpack_({x, y, z, w}, scale(p, -1.f));  // queued behind the op that writes its input
  EXPECT_EQ(x.to_host(), (std::vector<float>{-1, -2, -3, -4}));
  EXPECT_EQ(z.to_host(), (std::vector<float>{-5, -6, -7}));
  EXPECT_EQ(w.item(), -8.f);
  // Later writes to the packed tensor or its sources do not reach what was made from them.
  copy_(a, zeros({2, 2}, dev()));
  EXPECT_EQ(p.to_host()[0], 1.f);
  // Many tensors, one op each way.
  std::vector<Tensor> many, back;
  for (int i = 0; i < 3000; ++i) {
    many.push_back(make({1}, {float(i)}));
    back.push_back(zeros({1}, dev()));
  }
  const uint64_t before = queue_stats(dev()).pushed;
  Tensor q = pack(many);
  unpack_(back, q);
  EXPECT_EQ(queue_stats(dev()).pushed - before, 2u);
  EXPECT_EQ(back[2999].item(), 2999.f);
}

// What `f` throws as an `E`, or a line saying it threw nothing.
template <class E, class F>
std::string thrown(F f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "(nothing thrown)";
}

TEST_P(Ops, PackAndUnpackRefuseWhatDoesNotFitInOneLine) {
  Tensor a = make({2}, {1, 2});
  const uint64_t before = queue_stats(dev()).pushed;
  EXPECT_EQ(thrown<Error>([&] { pack({}); }), "pack: no tensors");
  EXPECT_EQ(thrown<Error>([&] { pack({a, Tensor()}); }), "pack: undefined tensor argument");
  EXPECT_EQ(thrown<Error>([&] { unpack_({}, a); }), "unpack_: no tensors");
  EXPECT_EQ(thrown<ShapeError>([&] { unpack_({a}, make({3}, {1, 2, 3})); }),
            "unpack_: the tensors hold 2 values, the packed tensor is (3,)");
  EXPECT_EQ(thrown<ShapeError>([&] { unpack_({a}, make({1, 2}, {1, 2})); }),
            "unpack_: the tensors hold 2 values, the packed tensor is (1, 2)");
  EXPECT_EQ(queue_stats(dev()).pushed - before, 2u);  // the two make()s: nothing of the refused calls
  Tensor elsewhere = copy_to(a, dev() == Device::cpu(1) ? Device::cpu(0) : Device::cpu(1));
  EXPECT_NE(thrown<DeviceError>([&] { pack({a, elsewhere}); }).find("pack: tensors on "), std::string::npos);
  EXPECT_EQ(a.to_host(), (std::vector<float>{1, 2}));
}

TEST_P(Ops, RandomNumbersHaveTheirDistributionAndFollowTheSeed) {
  const int64_t n = 100000;
  manual_seed(2024);
  EXPECT_EQ(random_offset(), 0u);
  const std::vector<float> g = randn({n}, dev(), /*mean=*/1.5f, /*stddev=*/2.f).to_host();
  EXPECT_EQ(random_offset(), static_cast<uint64_t>(n));  // each draw advances the stream
  double s = 0, s2 = 0;
  for (float x : g) s += x;
  const double mu = s / n;
  for (float x : g) s2 += (x - mu) * (x - mu);
  const double sd = std::sqrt(s2 / (n - 1));
  // Standard errors: 2/√n ≈ 0.006 for the mean, 2/√(2n) ≈ 0.0045 for the std; ~5σ bounds.
  EXPECT_NEAR(mu, 1.5, 0.03);
  EXPECT_NEAR(sd, 2.0, 0.025);

  const std::vector<float> u = rand_uniform({n}, dev(), -1.f, 3.f).to_host();
  double us = 0;
  for (float x : u) {
    EXPECT_GE(x, -1.f);
    EXPECT_LE(x, 3.f);
    us += x;
  }
  EXPECT_NEAR(us / n, 1.0, 0.03);  // uniform: σ = 4/√12 ≈ 1.15, standard error 0.004

  manual_seed(77);
  const std::vector<float> first = randn({1001}, dev()).to_host();   // odd: the pairwise normals' tail
  const std::vector<float> second = randn({1001}, dev()).to_host();  // the stream moved on
  manual_seed(77);
  EXPECT_EQ(randn({1001}, dev()).to_host(), first) << "same seed, same offset: same numbers";
  EXPECT_NE(second, first) << "a later offset gave the same numbers";
  manual_seed(78);
  EXPECT_NE(randn({1001}, dev()).to_host(), first) << "another seed gave the same numbers";
}

// --- the frontend's checks -------------------------------------------------------

TEST_P(Ops, RandomOpsRefuseADistributionThatIsNotOne) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const uint64_t offset = random_offset();
  EXPECT_THROW(randn({2}, dev(), 0.f, -1.f), ShapeError);
  EXPECT_THROW(randn({2}, dev(), 0.f, nan), ShapeError);
  EXPECT_THROW(randn({2}, dev(), inf, 1.f), ShapeError);
  EXPECT_THROW(rand_uniform({2}, dev(), 2.f, 1.f), ShapeError);
  EXPECT_THROW(rand_uniform({2}, dev(), nan, 1.f), ShapeError);
  EXPECT_THROW(rand_uniform({2}, dev(), 0.f, inf), ShapeError);
  EXPECT_EQ(random_offset(), offset) << "a refused draw moved the stream";
  EXPECT_EQ(randn({3}, dev(), 1.f, 0.f).to_host(), std::vector<float>(3, 1.f));  // a deviation of 0: the mean
  EXPECT_EQ(rand_uniform({3}, dev(), 2.f, 2.f).to_host(), std::vector<float>(3, 2.f));
}

// A call that must fail at the call site: its arguments are made first (made
// with ones(), queued), then the count of queued ops is taken, then the call.
struct BadCall {
  const char* name;
  std::vector<std::pair<Shape, Device>> args;
  std::function<void(std::vector<Tensor>&)> call;
  std::vector<std::string> named;  // what the message must name
};

template <class E>
void expect_rejected_at_call_site(const BadCall& c) {
  SCOPED_TRACE(c.name);
  std::vector<Tensor> args;
  for (const auto& [shape, d] : c.args) args.push_back(ones(shape, d));
  std::vector<std::pair<Device, uint64_t>> pushed;
  for (const auto& a : c.args) pushed.push_back({a.second, queue_stats(a.second).pushed});
  try {
    c.call(args);
    ADD_FAILURE() << "nothing was thrown";
  } catch (const E& e) {
    for (const std::string& s : c.named) EXPECT_NE(std::string(e.what()).find(s), std::string::npos) << e.what();
  }
  for (const auto& [d, n] : pushed) EXPECT_EQ(queue_stats(d).pushed, n) << "a rejected call queued work on " << d.str();
}

TEST_P(Ops, ShapeErrorsThrowAtTheCallSiteNamingBothShapes) {
  const Device d = dev();
  Dense layer(4);
  {
    NoGradGuard ng;
    layer(ones({2, 3}, d));  // initialised for 3 input features
  }
  Tensor p = ones({2, 3}, d).requires_grad_();
  Tensor y = scale(p, 2.f);
  Tensor no_momentum;
  const BadCall calls[] = {
      {"matmul", {{{2, 3}, d}, {{4, 5}, d}}, [](auto& t) { matmul(t[0], t[1]); }, {"(2, 3)", "(4, 5)"}},
      {"matmul, a transposed", {{{2, 3}, d}, {{3, 5}, d}},
       [](auto& t) { matmul(t[0], t[1], true); }, {"(2, 3)", "(3, 5)"}},
      {"matmul, b transposed", {{{2, 3}, d}, {{4, 5}, d}},
       [](auto& t) { matmul(t[0], t[1], false, true); }, {"(2, 3)", "(4, 5)"}},
      {"matmul, 1-D operand", {{{3}, d}, {{3, 2}, d}}, [](auto& t) { matmul(t[0], t[1]); }, {"(3,)", "(3, 2)"}},
      {"bias_add", {{{2, 3}, d}, {{4}, d}}, [](auto& t) { bias_add(t[0], t[1]); }, {"(2, 3)", "(4,)"}},
      {"linear, input", {{{2, 3}, d}, {{4, 5}, d}},
       [](auto& t) { linear(t[0], t[1], Tensor()); }, {"(2, 3)", "(4, 5)"}},
      {"linear, bias", {{{2, 3}, d}, {{4, 3}, d}, {{5}, d}},
       [](auto& t) { linear(t[0], t[1], t[2]); }, {"(4, 3)", "(5,)"}},
      {"l2_loss, columns", {{{2, 3}, d}, {{2}, d}}, [](auto& t) { l2_loss(t[0], t[1]); }, {"(2, 3)", "(2,)"}},
      {"l2_loss, rows", {{{2, 1}, d}, {{3}, d}}, [](auto& t) { l2_loss(t[0], t[1]); }, {"(2, 1)", "(3,)"}},
      {"add", {{{2, 3}, d}, {{3, 2}, d}}, [](auto& t) { add(t[0], t[1]); }, {"(2, 3)", "(3, 2)"}},
      {"sub", {{{6}, d}, {{2, 3}, d}}, [](auto& t) { sub(t[0], t[1]); }, {"(6,)", "(2, 3)"}},
      {"mul", {{{2, 3}, d}, {{3}, d}}, [](auto& t) { mul(t[0], t[1]); }, {"(2, 3)", "(3,)"}},
      {"copy_", {{{2, 3}, d}, {{6}, d}}, [](auto& t) { copy_(t[0], t[1]); }, {"(2, 3)", "(6,)"}},
      {"sgd_update_", {{{2, 3}, d}, {{3, 2}, d}},
       [&](auto& t) { sgd_update_(t[0], t[1], no_momentum, 0.1f, 0.f, 0.f, 1.f); }, {"(2, 3)", "(3, 2)"}},
      {"backward, head", {{{3, 2}, d}}, [&](auto& t) { backward(y, t[0]); }, {"(2, 3)", "(3, 2)"}},
      {"Dense, input width", {{{2, 5}, d}}, [&](auto& t) { layer(t[0]); }, {"(2, 5)", "(4, 3)"}},
      {"item of many", {{{2}, d}}, [](auto& t) { t[0].item(); }, {"(2,)"}},
      {"mean of nothing", {{{0, 3}, d}}, [](auto& t) { mean(t[0]); }, {"(0, 3)"}},
  };
  for (const BadCall& c : calls) expect_rejected_at_call_site<ShapeError>(c);
}

TEST_P(Ops, DeviceMismatchThrowsAtTheCallSite) {
  const Device here = dev(), there = Device::cpu(1);
  Tensor no_momentum;
  Tensor p = ones({2, 2}, here).requires_grad_();
  Tensor y = scale(p, 2.f);  // a graph on `here`, for a head gradient from `there`
  const BadCall calls[] = {
      {"add", {{{2, 2}, here}, {{2, 2}, there}}, [](auto& t) { add(t[0], t[1]); }, {}},
      {"sub", {{{2, 2}, here}, {{2, 2}, there}}, [](auto& t) { sub(t[0], t[1]); }, {}},
      {"mul", {{{2, 2}, here}, {{2, 2}, there}}, [](auto& t) { mul(t[0], t[1]); }, {}},
      {"matmul", {{{2, 2}, here}, {{2, 2}, there}}, [](auto& t) { matmul(t[0], t[1]); }, {}},
      {"bias_add", {{{2, 2}, here}, {{2}, there}}, [](auto& t) { bias_add(t[0], t[1]); }, {}},
      {"linear, weight", {{{2, 2}, here}, {{2, 2}, there}}, [](auto& t) { linear(t[0], t[1], Tensor()); }, {}},
      {"linear, bias", {{{2, 2}, here}, {{2, 2}, here}, {{2}, there}}, [](auto& t) { linear(t[0], t[1], t[2]); }, {}},
      {"l2_loss", {{{2, 2}, here}, {{2, 2}, there}}, [](auto& t) { l2_loss(t[0], t[1]); }, {}},
      {"copy_", {{{2, 2}, here}, {{2, 2}, there}}, [](auto& t) { copy_(t[0], t[1]); }, {}},
      {"sgd_update_", {{{2, 2}, here}, {{2, 2}, there}},
       [&](auto& t) { sgd_update_(t[0], t[1], no_momentum, 0.1f, 0.f, 0.f, 1.f); }, {}},
      {"sgd_update_, momentum", {{{2, 2}, here}, {{2, 2}, here}, {{2, 2}, there}},
       [](auto& t) { sgd_update_(t[0], t[1], t[2], 0.1f, 0.9f, 0.f, 1.f); }, {}},
      {"linear_relu, weight", {{{2, 2}, here}, {{2, 2}, there}},
       [](auto& t) { linear_relu(t[0], t[1], Tensor()); }, {}},
      {"backward, head", {{{2, 2}, here}, {{2, 2}, there}}, [&](auto& t) { backward(y, t[1]); }, {}},
  };
  for (BadCall c : calls) {
    c.named = {here.str(), there.str()};
    expect_rejected_at_call_site<DeviceError>(c);
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, Ops, ::testing::ValuesIn(test_devices()), device_name);

TEST(OpsParseDevice, GoodStrings) {
  EXPECT_EQ(parse_device("cpu"), Device::cpu(0));
  EXPECT_EQ(parse_device("cpu:0"), Device::cpu(0));
  EXPECT_EQ(parse_device("cpu:1"), Device::cpu(1));
  EXPECT_EQ(parse_device("cpu:7"), Device::cpu(kMaxCpuDevices - 1));
  bool fell_back = true;
  const Device a = parse_device("auto", &fell_back);
  if (cuda_device_count() > 0) {
    EXPECT_EQ(a, Device::cuda(0));
    EXPECT_FALSE(fell_back);
    EXPECT_EQ(parse_device("cuda"), Device::cuda(0));
    EXPECT_EQ(parse_device("cuda:0"), Device::cuda(0));
  } else {
    EXPECT_EQ(a, Device::cpu(0));
    EXPECT_TRUE(fell_back);
  }
  EXPECT_EQ(Device::cpu(1).str(), "cpu:1");
  EXPECT_EQ(Device::cuda(2).str(), "cuda:2");
}

TEST(OpsParseDevice, BadStringsThrowDeviceErrorNamingThem) {
  std::vector<std::string> bad{"cpu:8", "gpu", "cuda:x", "cpu:-1", "cpu:", "CPU", "cpu:1x", " cpu", "cpu:0:0",
                               "cuda:" + std::to_string(cuda_device_count())};
  if (cuda_device_count() == 0) bad.push_back("cuda");
  for (const std::string& s : bad) {
    SCOPED_TRACE("'" + s + "'");
    try {
      parse_device(s);
      ADD_FAILURE() << "accepted";
    } catch (const DeviceError& e) {
      EXPECT_NE(std::string(e.what()).find("'" + s + "'"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(parse_device(""), DeviceError);
  EXPECT_THROW(context(Device::cpu(kMaxCpuDevices)), DeviceError);
  EXPECT_THROW(context(Device::cuda(cuda_device_count())), DeviceError);
}

}  // namespace
}  // namespace amlp::testing
