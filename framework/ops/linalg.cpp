// linalg.cpp — matmul, bias_add and linear (a Dense layer's GEMM). Kernels:
// cpu/linalg.cpp (OpenBLAS), cuda/linalg.cpp (cuBLAS); add_bias in elementwise.
#include <tuple>

#include "framework/ops/op.h"

namespace amlp {

using namespace ops;

Tensor matmul(const Tensor& a, const Tensor& b, bool ta, bool tb) {
  need_defined("matmul", {&a, &b});
  need_2d("matmul", a, "a", &b, "b");
  need_2d("matmul", b, "b", &a, "a");
  same_device("matmul", {&a, &b});
  const int64_t M = ta ? a.dim(1) : a.dim(0), K = ta ? a.dim(0) : a.dim(1);
  const int64_t K2 = tb ? b.dim(1) : b.dim(0), N = tb ? b.dim(0) : b.dim(1);
  if (K != K2)
    throw ShapeError(detail::concat("matmul: shapes ", shape_str(a.shape()), ta ? "ᵀ" : "", " and ",
                                    shape_str(b.shape()), tb ? "ᵀ" : "", " do not fit (inner dimensions ", K,
                                    " and ", K2, ")"));
  // The kernels take int dimensions: every one of a's and b's must fit, and
  // the output's element and byte counts too, before anything is allocated.
  const int lda = dim_int("matmul", a, 1, &b, "b"), ldb = dim_int("matmul", b, 1, &a, "a");
  dim_int("matmul", a, 0, &b, "b"), dim_int("matmul", b, 0, &a, "a");
  detail::check_shape("matmul", {M, N});
  Tensor y = alloc({M, N}, ctx_of(a));  // y: (M, N)
  const OpScalars scalars{ta, tb, static_cast<uint64_t>(M), static_cast<uint64_t>(N),
                          static_cast<uint64_t>(K), static_cast<uint64_t>(lda), static_cast<uint64_t>(ldb)};
  enqueue(ctx_of(a), "matmul", {&a, &b}, {&y}, scalars, [](Backend& be, const OpArgs& k) {
    const int N = k.scalar_int(3);
    be.kernels.gemm(be, k.scalar_bool(0), k.scalar_bool(1), k.scalar_int(2), N, k.scalar_int(4), 1.f, k.in(0), k.scalar_int(5),
            k.in(1), k.scalar_int(6), 0.f, k.out(0), N);
  });
  if (detail::any_requires_grad({&a, &b}))
    // g: (M, N).  d op(a) = g·op(b)ᵀ (M,K);  d op(b) = op(a)ᵀ·g (K,N)
    detail::record(y, "matmul", {a, b}, [a, b, ta, tb](const Tensor& g) {
      Tensor da, db;
      if (a.requires_grad()) da = ta ? matmul(b, g, tb, true) : matmul(g, b, false, !tb);
      if (b.requires_grad()) db = tb ? matmul(g, a, true, ta) : matmul(a, g, !ta, false);
      return std::vector<Tensor>{da, db};
    });
  return y;
}

Tensor bias_add(const Tensor& x, const Tensor& b) {
  need_defined("bias_add", {&x, &b});
  need_2d("bias_add", x, "x", &b, "bias");
  if (b.ndim() != 1 || b.dim(0) != x.dim(1))
    throw ShapeError(detail::concat("bias_add: x ", shape_str(x.shape()), " and bias ", shape_str(b.shape()),
                                    " do not fit (bias must be (", x.dim(1), ",))"));
  same_device("bias_add", {&x, &b});
  const int rows = dim_int("bias_add", x, 0), cols = dim_int("bias_add", x, 1);  // before allocating
  Tensor y = alloc(x.shape(), ctx_of(x));
  enqueue(ctx_of(x), "bias_add", {&x, &b}, {&y}, dims({rows, cols}), [](Backend& be, const OpArgs& k) {
    be.kernels.add_bias(be, k.in(0), k.in(1), k.out(0), k.scalar_int(0), k.scalar_int(1));
  });
  if (detail::any_requires_grad({&x, &b}))
    detail::record(y, "bias_add", {x, b}, [](const Tensor& g) {
      return std::vector<Tensor>{g, sum_rows(g)};  // dx = g;  db(c) = Σ_r g(r,c)
    });
  return y;
}

std::pair<Tensor, Tensor> linear_grad_weight(const Tensor& dz, const Tensor& x, bool bias) {
  need_defined("linear_grad_weight", {&dz, &x});
  need_2d("linear_grad_weight", dz, "dz", &x, "x");
  need_2d("linear_grad_weight", x, "x", &dz, "dz");
  same_device("linear_grad_weight", {&dz, &x});
  if (dz.dim(0) != x.dim(0))
    throw ShapeError(detail::concat("linear_grad_weight: dz ", shape_str(dz.shape()), " and x ", shape_str(x.shape()),
                                    " do not fit (both need one row per sample)"));
  const int B = dim_int("linear_grad_weight", dz, 0, &x, "x"), out = dim_int("linear_grad_weight", dz, 1, &x, "x"),
            in = dim_int("linear_grad_weight", x, 1, &dz, "dz");
  detail::check_shape("linear_grad_weight", {out, in});
  Tensor dw = alloc({out, in}, ctx_of(dz)), db;
  if (bias) db = alloc({out}, ctx_of(dz));
  enqueue(ctx_of(dz), "linear_grad_weight", {&dz, &x}, {&dw, &db}, dims({B, in, out, bias}),
          [](Backend& be, const OpArgs& k) {
    be.kernels.dense_grad_weight(be, k.in(0), k.in(1), k.out(0), k.out(1), k.scalar_int(0), k.scalar_int(1), k.scalar_int(2));
  });
  return {dw, db};
}

// The checks and sizes linear and linear_relu share: y is (B, out).
namespace {
struct LinearDims {
  int B, in, out;
};
LinearDims check_linear(const char* op, const Tensor& x, const Tensor& w, const Tensor& b) {
  need_defined(op, {&x, &w});
  need_2d(op, x, "x", &w, "weight");
  need_2d(op, w, "weight", &x, "x");
  if (x.dim(1) != w.dim(1))
    throw ShapeError(detail::concat(op, ": input ", shape_str(x.shape()), " and weight ", shape_str(w.shape()),
                                    " do not fit (input has ", x.dim(1), " features, weight expects ", w.dim(1), ")"));
  same_device(op, {&x, &w, &b});
  if (b.defined() && (b.ndim() != 1 || b.dim(0) != w.dim(0)))
    throw ShapeError(detail::concat(op, ": weight ", shape_str(w.shape()), " and bias ", shape_str(b.shape()),
                                    " do not fit (bias must be (", w.dim(0), ",))"));
  const int B = dim_int(op, x, 0, &w, "weight"), in = dim_int(op, x, 1, &w, "weight"),
            out = dim_int(op, w, 0, &x, "x");
  detail::check_shape(op, {B, out});
  return {B, in, out};
}
}  // namespace

// What linear_relu leaves on its node for the op that consumes its output y
// (tape.h's Node::relu): that op's input gradient dL/dy = g·W, masked by the
// ReLU and summed over the rows in the same op (linear_grad_input_relu),
// becomes linear_relu's dz, and the sum its bias gradient. The ReLU's
// backward is idempotent (dz·(y > 0) = dz), so a masked dL/dy is still a
// right one wherever several consumers' gradients meet and are added: then
// linear_relu masks the sum itself, as unfused.
struct ReluHandoff {
  Tensor y;      // linear_relu's output (no autograd state)
  Tensor mask;   // its ReLU's bits (dense_forward_relu_mask), or undefined
  bool want_db;  // its bias wants a gradient
  Tensor dz;     // what the consumer returned as dL/dy, already through the ReLU
  Tensor db;     // and its sum over the rows
};

namespace {
// dL/dx of a Dense layer: g·W, or, when x is linear_relu's output, the
// fused op that also applies that ReLU's backward and sums its bias gradient.
Tensor input_grad(const Tensor& g, const Tensor& w, const Tensor& x) {
  const std::shared_ptr<Node>& n = x.impl()->grad_fn;
  ReluHandoff* h = n ? n->relu.get() : nullptr;
  if (!h) return matmul(g, w);
  std::tie(h->dz, h->db) = linear_grad_input_relu(g, w, h->y, h->mask, h->want_db);
  return h->dz;
}
}  // namespace

std::pair<Tensor, Tensor> linear_grad_input_relu(const Tensor& g, const Tensor& w, const Tensor& y,
                                                 const Tensor& mask, bool bias) {
  const char* op = "linear_grad_input_relu";
  need_defined(op, {&g, &w, &y});
  need_2d(op, g, "g", &w, "weight");
  need_2d(op, w, "weight", &g, "g");
  need_2d(op, y, "y", &g, "g");
  same_device(op, {&g, &w, &y, &mask});
  if (g.dim(1) != w.dim(0) || y.dim(0) != g.dim(0) || y.dim(1) != w.dim(1))
    throw ShapeError(detail::concat(op, ": g ", shape_str(g.shape()), ", weight ", shape_str(w.shape()), " and y ",
                                    shape_str(y.shape()), " do not fit (g·weight must have y's shape)"));
  const int B = dim_int(op, g, 0, &w, "weight"), out = dim_int(op, g, 1, &w, "weight"),
            in = dim_int(op, w, 1, &g, "g");
  if (mask.defined() && static_cast<size_t>(mask.numel()) != relu_mask_words(B, in))
    throw ShapeError(detail::concat(op, ": a ReLU mask of ", mask.numel(), " words for y ", shape_str(y.shape()),
                                    " (it needs ", relu_mask_words(B, in), ")"));
  detail::check_shape(op, {B, in});
  Tensor dz = alloc({B, in}, ctx_of(g)), db;
  if (bias) db = alloc({in}, ctx_of(g));
  enqueue(ctx_of(g), op, {&g, &w, &y, &mask}, {&dz, &db}, dims({B, in, out}), [](Backend& be, const OpArgs& k) {
    be.kernels.dense_grad_input_relu(be, k.in(0), k.in(1), k.in(2), reinterpret_cast<const uint32_t*>(k.in(3)),
                                     k.out(0), k.out(1), k.scalar_int(0), k.scalar_int(1), k.scalar_int(2));
  });
  return {dz, db};
}

Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b) {
  const auto [B, in, out] = check_linear("linear", x, w, b);
  Tensor y = alloc({B, out}, ctx_of(x));  // y: (B, out)
  enqueue(ctx_of(x), "linear", {&x, &w, &b}, {&y}, dims({B, in, out}), [](Backend& be, const OpArgs& k) {
    be.kernels.dense_forward(be, k.in(0), k.in(1), k.in(2), k.out(0), k.scalar_int(0), k.scalar_int(1), k.scalar_int(2), /*relu=*/false);
  });
  if (detail::any_requires_grad({&x, &w, &b}))
    detail::record(y, "linear", {x, w, b}, [x, w, b](const Tensor& g) {
      // g: (B, out).  dX = g·W (B, in);  dW = gᵀ·X (out, in) and db = Σ_r g (out) in one op
      Tensor dx, dw, db;
      if (x.requires_grad()) dx = input_grad(g, w, x);
      const bool want_b = b.defined() && b.requires_grad();
      if (w.requires_grad()) {
        std::tie(dw, db) = linear_grad_weight(g, x, want_b);
      } else if (want_b) {
        db = sum_rows(g);
      }
      return std::vector<Tensor>{dx, dw, db};
    });
  return y;
}

Tensor linear_relu(const Tensor& x, const Tensor& w, const Tensor& b) {
  const auto [B, in, out] = check_linear("linear_relu", x, w, b);
  DeviceContext& c = ctx_of(x);
  Tensor y = alloc({B, out}, c), mask;
  const bool grad = detail::any_requires_grad({&x, &w, &b});
  // Training on a backend that folds the ReLU's backward into the next
  // layer's GEMM through a mask (CUDA's cuBLASLt): the forward keeps it.
  if (grad && c.backend->kernels.dense_forward_relu_mask) {
    mask = alloc({static_cast<int64_t>(relu_mask_words(B, out))}, c);
    enqueue(c, "linear_relu", {&x, &w, &b}, {&y, &mask}, dims({B, in, out}), [](Backend& be, const OpArgs& k) {
      be.kernels.dense_forward_relu_mask(be, k.in(0), k.in(1), k.in(2), k.out(0), reinterpret_cast<uint32_t*>(k.out(1)),
                                         k.scalar_int(0), k.scalar_int(1), k.scalar_int(2));
    });
  } else {
    enqueue(c, "linear_relu", {&x, &w, &b}, {&y}, dims({B, in, out}), [](Backend& be, const OpArgs& k) {
      be.kernels.dense_forward(be, k.in(0), k.in(1), k.in(2), k.out(0), k.scalar_int(0), k.scalar_int(1),
                               k.scalar_int(2), /*relu=*/true);  // y = max(x·Wᵀ + b, 0)
    });
  }
  if (!grad) return y;
  auto relu = std::make_shared<ReluHandoff>();
  relu->y = detail::alias(y);
  relu->mask = mask;
  relu->want_db = b.defined() && b.requires_grad();
  detail::record(y, "linear_relu", {x, w, b}, [x, w, b, relu, B = B, out = out](const Tensor& g) {
    // dz = g·(y > 0) and db = Σ_r dz: done by the consumer's input gradient
    // when g is what it returned (ReluHandoff), else here in one pass; then
    // dX = dz·W (fused with the ReLU below, if any), dW = dzᵀ·X.
    Tensor dz, db;
    if (relu->dz.defined() && relu->dz.impl() == g.impl()) {
      dz = g, db = relu->db;
    } else {
      DeviceContext& c = ctx_of(g);
      dz = alloc({B, out}, c);
      if (relu->want_db) db = alloc({out}, c);
      enqueue(c, "relu_backward_sum_rows", {&relu->y, &g}, {&dz, &db}, dims({B, out}), [](Backend& be, const OpArgs& k) {
        be.kernels.relu_backward_sum_rows(be, k.in(0), k.in(1), k.out(0), k.out(1), k.scalar_int(0), k.scalar_int(1));
      });
    }
    relu->dz = Tensor(), relu->db = Tensor();
    Tensor dx, dw;
    if (x.requires_grad()) dx = input_grad(dz, w, x);
    if (w.requires_grad()) dw = matmul(dz, x, /*transpose_a=*/true);
    return std::vector<Tensor>{dx, dw, db};
  });
  y.impl()->grad_fn->relu = std::move(relu);
  return y;
}

}  // namespace amlp
