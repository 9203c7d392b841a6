// gradcheck.h — analytic vs central finite-difference Jacobians, the way
// flashlight's jacobianTestImpl and ggml's grad_expect do them.
//
//   Tensor a = ..., b = ...;               // leaves, requires_grad_()
//   auto r = check_gradients([&] { return matmul(a, b); }, {{"a", a}, {"b", b}});
//   EXPECT_TRUE(r.ok()) << r.summary();
//
// For a function f of leaves with m outputs, the analytic Jacobian is built
// row by row: one backward per output element i with a one-hot head e_i
// (f is re-run each time: backward releases the graph). The numeric Jacobian
// is built column by column: each leaf element j is moved to x_j ± h (written
// into the leaf in place, so parameters inside a model stay the same tensors)
// and f is re-evaluated without recording. Every output against every input
// element is compared; nothing is projected away.
//
// Precision. The framework is float32-only, so f can only be evaluated in
// float32; the differences are formed in double from those float32 values,
// and divided by the step actually taken, double(fl(x+h)) - double(fl(x-h)),
// so the rounding of x ± h itself costs nothing.
//   * Truncation error: every op here is at most quadratic in any single
//     scalar input (matmul/linear are bilinear, add/sub/scale/sum/mean linear,
//     l2_loss quadratic, ReLU piecewise linear), and so is the MLP with its
//     loss, between ReLU kinks. A central difference is exact for quadratics,
//     so the truncation error is zero and h may be large: h = 1e-2.
//   * Rounding error: each float32 evaluation of an output is off by a few
//     ulps of the largest magnitude involved (sums of k terms: ~k ulps), so
//     the difference quotient is off by about ulps·eps32·|y|max / (2h). With
//     h = 1e-2, |y| ≲ 10 and 16 ulps this is ~1e-3 at worst, ~1e-5 typically.
//   * The analytic side is float32 too: relative error ~k·eps32 ≈ 1e-6.
// Hence the per-element bound
//   |analytic − numeric| ≤ atol + rtol·max(|analytic|, |numeric|)
//                          + fd_ulps·eps32·|y|max / step
// with atol = 1e-5 and rtol = 1e-3 (a gradient off by 1% fails: see the
// checker's own tests). ReLU kinks break the "at most quadratic" premise:
// pass a `region` (the sign pattern of every ReLU input) and the checker
// reports kink_crossed if any perturbation changed it, so the caller can pick
// a better point rather than loosen the tolerance.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "framework/asyncmlp.h"

namespace amlp::testing {

struct Leaf {
  std::string name;
  Tensor t;  // requires_grad_(): its gradient is checked
};

struct GradCheckOptions {
  double h = 1e-2;
  double rtol = 1e-3;
  double atol = 1e-5;
  double fd_ulps = 16;
};

struct LeafReport {
  std::string leaf;
  size_t outputs = 0, inputs = 0;  // the Jacobian's shape: (outputs, inputs)
  bool ok = true;
  double worst = 0;    // max over the Jacobian of |analytic − numeric| / bound (≤ 1 passes)
  std::string detail;  // the worst element, analytic and numeric values
};

struct GradCheckReport {
  bool kink_crossed = false;  // a perturbation moved a ReLU input across 0: pick another point
  std::vector<LeafReport> leaves;

  bool ok() const {
    if (kink_crossed) return false;
    for (const auto& l : leaves)
      if (!l.ok) return false;
    return true;
  }
  std::string summary() const {
    std::ostringstream os;
    if (kink_crossed) os << "[test point too close to a ReLU kink] ";
    for (const auto& l : leaves)
      os << l.leaf << " (" << l.outputs << "x" << l.inputs << "): " << (l.ok ? "ok" : "FAILED") << ", worst "
         << l.worst << " of the bound; " << l.detail << "\n";
    return os.str();
  }
};

// Sign pattern of every ReLU input (or any piecewise boundary) at the leaves' current values.
using Region = std::function<std::vector<bool>()>;

namespace detail_gc {

inline std::vector<double> eval(const std::function<Tensor()>& f) {
  NoGradGuard ng;
  std::vector<float> y = f().to_host();
  return std::vector<double>(y.begin(), y.end());
}

inline void write(Tensor t, const std::vector<float>& v) {
  NoGradGuard ng;
  copy_(t, from_host(t.shape(), v.data(), t.device()));
}

inline double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::abs(x));
  return m;
}

}  // namespace detail_gc

inline GradCheckReport check_gradients(const std::function<Tensor()>& f, const std::vector<Leaf>& leaves,
                                       const GradCheckOptions& opt = {}, const Region& region = nullptr) {
  using namespace detail_gc;
  GradCheckReport report;
  const std::vector<double> y0 = eval(f);
  const size_t m = y0.size();

  // Analytic Jacobians, one row (output element) per backward.
  std::vector<std::vector<std::vector<double>>> ja(leaves.size());  // [leaf][out][in]
  for (size_t li = 0; li < leaves.size(); ++li)
    ja[li].assign(m, std::vector<double>(static_cast<size_t>(leaves[li].t.numel()), 0.0));
  for (size_t i = 0; i < m; ++i) {
    for (const Leaf& l : leaves) l.t.reset_grad();  // unreached leaves must read as zero
    Tensor y = f();
    if (!y.requires_grad()) break;  // f does not depend on any leaf: all zeros
    std::vector<float> head(m, 0.f);
    head[i] = 1.f;
    backward(y, from_host(y.shape(), head.data(), y.device()));
    for (size_t li = 0; li < leaves.size(); ++li) {
      Tensor g = leaves[li].t.grad();
      if (!g.defined()) continue;
      if (g.shape() != leaves[li].t.shape()) {
        ADD_FAILURE() << "gradient of " << leaves[li].name << " has shape " << shape_str(g.shape())
                      << ", the leaf " << shape_str(leaves[li].t.shape());
        continue;
      }
      std::vector<float> row = g.to_host();
      for (size_t j = 0; j < row.size(); ++j) ja[li][i][j] = row[j];
    }
  }
  for (const Leaf& l : leaves) l.t.reset_grad();

  // Numeric Jacobians, one column (leaf element) per pair of evaluations.
  const std::vector<bool> region0 = region ? region() : std::vector<bool>{};
  for (size_t li = 0; li < leaves.size(); ++li) {
    const Leaf& leaf = leaves[li];
    const std::vector<float> base = leaf.t.to_host();
    LeafReport lr;
    lr.leaf = leaf.name;
    lr.outputs = m;
    lr.inputs = base.size();
    std::vector<float> v = base;
    for (size_t j = 0; j < base.size(); ++j) {
      auto at = [&](double x, double* actual) {
        v[j] = static_cast<float>(x);
        *actual = v[j];
        write(leaf.t, v);
        if (region && region() != region0) report.kink_crossed = true;
        return eval(f);
      };
      double xp = 0, xm = 0;
      const std::vector<double> yp = at(base[j] + opt.h, &xp);
      const std::vector<double> ym = at(base[j] - opt.h, &xm);
      v[j] = base[j];
      const double step = xp - xm;
      const double ymax = std::max({max_abs(y0), max_abs(yp), max_abs(ym)});
      const double noise = opt.fd_ulps * FLT_EPSILON * ymax / step;
      for (size_t i = 0; i < m; ++i) {
        const double num = (yp[i] - ym[i]) / step;
        const double ana = ja[li][i][j];
        const double bound = opt.atol + opt.rtol * std::max(std::abs(ana), std::abs(num)) + noise;
        double ratio = std::abs(ana - num) / bound;
        if (!std::isfinite(ratio)) ratio = INFINITY;  // a NaN or an infinity anywhere fails
        if (ratio > lr.worst || lr.detail.empty()) {
          lr.worst = ratio;
          std::ostringstream os;
          os << "worst at d out[" << i << "] / d " << leaf.name << "[" << j << "]: analytic " << ana
             << ", numeric " << num << ", bound " << bound;
          lr.detail = os.str();
        }
      }
    }
    write(leaf.t, base);
    lr.ok = lr.worst <= 1.0;
    report.leaves.push_back(lr);
  }
  return report;
}

// The bound above for one element, for checks that form their own central
// differences (a gradient reduced across devices or processes): analytic
// and numeric derivative, the largest |output| of the three evaluations,
// and the step actually taken.
inline double fd_bound(double analytic, double numeric, double ymax, double step, const GradCheckOptions& opt = {}) {
  return opt.atol + opt.rtol * std::max(std::abs(analytic), std::abs(numeric)) + opt.fd_ulps * FLT_EPSILON * ymax / step;
}

// A leaf on `d` with the given host values.
inline Tensor make_leaf(const Shape& s, const std::vector<float>& values, Device d) {
  NoGradGuard ng;
  return from_host(s, values.data(), d).requires_grad_();
}

}  // namespace amlp::testing
