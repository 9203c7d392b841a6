// reduce.cpp — sums: sum, mean (to a scalar) and sum_rows (the bias
// gradient). Kernels: cpu/reduce.cpp, cuda/reduce.cu.
#include "framework/ops/op.h"

namespace amlp {

using namespace ops;

Tensor sum_rows(const Tensor& x) {
  need_defined("sum_rows", {&x});
  need_2d("sum_rows", x, "x");
  const int rows = dim_int("sum_rows", x, 0), cols = dim_int("sum_rows", x, 1);  // before allocating
  Tensor y = alloc({x.dim(1)}, ctx_of(x));  // y: (C)
  enqueue(ctx_of(x), "sum_rows", {&x}, {&y}, dims({rows, cols}), [](Backend& be, const OpArgs& k) {
    be.kernels.column_sums(be, k.in(0), k.out(0), k.scalar_int(0), k.scalar_int(1));
  });
  return y;
}

static Tensor reduce(const char* name, const Tensor& a, float scale_by) {
  need_defined(name, {&a});
  Tensor y = alloc({}, ctx_of(a));  // shape ()
  const size_t n = count(a);
  enqueue(ctx_of(a), name, {&a}, {&y}, {n, scalar_bits(scale_by)}, [](Backend& be, const OpArgs& k) {
    be.kernels.sum_scaled(be, k.in(0), k.out(0), k.scalar(0), k.scalar_float(1));
  });
  if (detail::any_requires_grad({&a}))
    detail::record(y, name, {a}, [a, n, scale_by](const Tensor& g) {
      Tensor da = alloc(a.shape(), ctx_of(a));  // da(i) = g · scale
      enqueue(ctx_of(a), "broadcast_scalar", {&g}, {&da}, {n, scalar_bits(scale_by)}, [](Backend& be, const OpArgs& k) {
        be.kernels.broadcast_scalar(be, k.in(0), k.scalar_float(1), k.out(0), k.scalar(0));
      });
      return std::vector<Tensor>{da};
    });
  return y;
}

Tensor sum(const Tensor& a) { return reduce("sum", a, 1.f); }

Tensor mean(const Tensor& a) {
  need_defined("mean", {&a});
  if (a.numel() == 0) throw ShapeError("mean: empty tensor " + shape_str(a.shape()));
  return reduce("mean", a, 1.f / static_cast<float>(a.numel()));
}

}  // namespace amlp
