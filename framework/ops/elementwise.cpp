// elementwise.cpp — ops that map each element on its own: add, sub, mul, scale,
// add_scalar, relu (and its backward), fill. Kernels: cpu/elementwise.cpp,
// cuda/elementwise.cu.
#include "framework/ops/op.h"

namespace amlp {

using namespace ops;

namespace {

// Two operands of one shape on one device (ShapeError, DeviceError otherwise).
void check_pair(const char* name, const Tensor& a, const Tensor& b) {
  need_defined(name, {&a, &b});
  if (a.shape() != b.shape())
    throw ShapeError(detail::concat(name, ": shapes ", shape_str(a.shape()), " and ", shape_str(b.shape()), " differ"));
  same_device(name, {&a, &b});
}

// y = alpha·a + beta·b
Tensor axpby_op(const char* name, const Tensor& a, const Tensor& b, float alpha, float beta) {
  check_pair(name, a, b);
  Tensor y = alloc(a.shape(), ctx_of(a));
  const size_t n = count(a);
  enqueue(ctx_of(a), name, {&a, &b}, {&y}, {n, scalar_bits(alpha), scalar_bits(beta)}, [](Backend& be, const OpArgs& k) {
    be.kernels.axpby(be, k.scalar_float(1), k.in(0), k.scalar_float(2), k.in(1), k.out(0), k.scalar(0));
  });
  return y;
}

}  // namespace

Tensor empty(const Shape& s, Device d) {
  detail::check_shape("empty", s);
  return alloc(s, context(d), /*now=*/true);  // no op writes it: it needs its memory now, whatever the policy
}

Tensor full(const Shape& s, float v, Device d) {
  detail::check_shape("full", s);
  DeviceContext& c = context(d);
  Tensor y = alloc(s, c);
  const size_t n = count(y);
  enqueue(c, "fill", {}, {&y}, {n, scalar_bits(v)}, [](Backend& be, const OpArgs& k) {
    be.kernels.fill_value(be, k.out(0), k.scalar(0), k.scalar_float(1));
  });
  return y;
}

Tensor add(const Tensor& a, const Tensor& b) {
  Tensor y = axpby_op("add", a, b, 1.f, 1.f);
  if (detail::any_requires_grad({&a, &b}))
    detail::record(y, "add", {a, b}, [](const Tensor& g) { return std::vector<Tensor>{g, g}; });
  return y;
}

Tensor sub(const Tensor& a, const Tensor& b) {
  Tensor y = axpby_op("sub", a, b, 1.f, -1.f);
  if (detail::any_requires_grad({&a, &b}))
    detail::record(y, "sub", {a, b}, [](const Tensor& g) { return std::vector<Tensor>{g, scale(g, -1.f)}; });
  return y;
}

Tensor mul(const Tensor& a, const Tensor& b) {
  check_pair("mul", a, b);
  Tensor y = alloc(a.shape(), ctx_of(a));
  const size_t n = count(a);
  enqueue(ctx_of(a), "mul", {&a, &b}, {&y}, {n},
          [](Backend& be, const OpArgs& k) { be.kernels.multiply(be, k.in(0), k.in(1), k.out(0), k.scalar(0)); });
  if (detail::any_requires_grad({&a, &b}))  // d(a·b) = g·b, g·a
    detail::record(y, "mul", {a, b}, [a, b](const Tensor& g) { return std::vector<Tensor>{mul(g, b), mul(g, a)}; });
  return y;
}

Tensor scale(const Tensor& a, float s) {
  need_defined("scale", {&a});
  Tensor y = alloc(a.shape(), ctx_of(a));
  const size_t n = count(a);
  enqueue(ctx_of(a), "scale", {&a}, {&y}, {n, scalar_bits(s)}, [](Backend& be, const OpArgs& k) {
    be.kernels.axpby(be, k.scalar_float(1), k.in(0), 0.f, nullptr, k.out(0), k.scalar(0));
  });
  if (detail::any_requires_grad({&a}))
    detail::record(y, "scale", {a}, [s](const Tensor& g) { return std::vector<Tensor>{scale(g, s)}; });
  return y;
}

Tensor add_scalar(const Tensor& a, float s) {
  need_defined("add_scalar", {&a});
  Tensor y = alloc(a.shape(), ctx_of(a));
  const size_t n = count(a);
  enqueue(ctx_of(a), "add_scalar", {&a}, {&y}, {n, scalar_bits(s)}, [](Backend& be, const OpArgs& k) {
    be.kernels.scalar_add(be, k.in(0), k.scalar_float(1), k.out(0), k.scalar(0));
  });
  if (detail::any_requires_grad({&a}))
    detail::record(y, "add_scalar", {a}, [](const Tensor& g) { return std::vector<Tensor>{g}; });
  return y;
}

Tensor relu(const Tensor& x) {
  need_defined("relu", {&x});
  Tensor y = alloc(x.shape(), ctx_of(x));
  const size_t n = count(x);
  enqueue(ctx_of(x), "relu", {&x}, {&y}, {n}, [](Backend& be, const OpArgs& k) {
    be.kernels.relu_forward(be, k.in(0), k.out(0), k.scalar(0));
  });
  if (detail::any_requires_grad({&x}))
    detail::record(y, "relu", {x}, [x, n](const Tensor& g) {
      Tensor dx = alloc(x.shape(), ctx_of(x));  // dx = g · (x > 0)
      enqueue(ctx_of(x), "relu_backward", {&x, &g}, {&dx}, {n}, [](Backend& be, const OpArgs& k) {
        be.kernels.relu_backward(be, k.in(0), k.in(1), k.out(0), k.scalar(0));
      });
      return std::vector<Tensor>{dx};
    });
  return y;
}

}  // namespace amlp
