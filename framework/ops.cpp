// ops.cpp — frontend ops: check on the calling thread, allocate outputs,
// queue one kernel, record the backward. Nothing here runs a kernel.
#include "framework/ops.h"

#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>

#include "framework/autograd.h"
#include "framework/enqueue.h"
#include "framework/error.h"
#include "framework/runtime.h"
#include "framework/trace.h"

namespace amlp {

namespace {

using detail::enqueue;

// Allocates an output on `c` (outputs exist from the moment the op is queued).
Tensor alloc(const Shape& s, DeviceContext& c) {
  for (int64_t d : s)
    if (d < 0) throw ShapeError("negative dimension in shape " + shape_str(s));
  auto impl = std::make_shared<TensorImpl>();
  impl->shape = s;
  impl->ctx = &c;
  impl->storage = c.pool.allocate(static_cast<size_t>(numel(s)) * sizeof(float));
  return Tensor(std::move(impl));
}

void same_device(const char* op, const Tensor& a, const Tensor& b) {
  if (a.device() != b.device())
    throw DeviceError(detail::concat(op, ": tensors on ", a.device().str(), " and ", b.device().str(),
                                     " (move one with copy_to())"));
}

void need_defined(const char* op, std::initializer_list<const Tensor*> ts) {
  for (const Tensor* t : ts)
    if (!t->defined()) throw Error(detail::concat(op, ": undefined tensor argument"));
}

// For a binary op, `other` is the second operand, named in the message too.
void need_2d(const char* op, const Tensor& t, const char* what, const Tensor* other = nullptr,
             const char* other_what = "") {
  if (t.ndim() != 2)
    throw ShapeError(detail::concat(op, ": ", what, " must be 2-D, got shape ", shape_str(t.shape()),
                                    other ? detail::concat(" (", other_what, " ", shape_str(other->shape()), ")")
                                          : std::string()));
}

struct RandomState {
  std::mutex mu;
  uint64_t seed = 0;
  uint64_t offset = 0;
};
RandomState& rng() {
  static RandomState r;
  return r;
}

// Draw position for n numbers; Philox makes 4 per counter step.
std::pair<uint64_t, uint64_t> draw(size_t n) {
  RandomState& r = rng();
  std::lock_guard<std::mutex> lk(r.mu);
  auto at = std::make_pair(r.seed, r.offset);
  r.offset += (n + 3) / 4 * 4;
  return at;
}

Tensor elementwise(const char* name, const Tensor& a, const Tensor& b, float alpha, float beta) {
  need_defined(name, {&a, &b});
  if (a.shape() != b.shape())
    throw ShapeError(detail::concat(name, ": shapes ", shape_str(a.shape()), " and ", shape_str(b.shape()), " differ"));
  same_device(name, a, b);
  DeviceContext& c = a.ctx();
  Tensor y = alloc(a.shape(), c);
  Backend* be = c.backend.get();
  const float *pa = a.data(), *pb = b.data();
  float* py = y.data();
  size_t n = static_cast<size_t>(a.numel());
  enqueue(c, name, {&a, &b}, {&y}, [=] { be->axpby(alpha, pa, beta, pb, py, n); });
  return y;
}

}  // namespace

// --- creation -----------------------------------------------------------------

Tensor empty(const Shape& s, Device d) { return alloc(s, context(d)); }

Tensor full(const Shape& s, float v, Device d) {
  DeviceContext& c = context(d);
  Tensor y = alloc(s, c);
  Backend* be = c.backend.get();
  float* p = y.data();
  size_t n = static_cast<size_t>(y.numel());
  enqueue(c, "fill", {}, {&y}, [=] { be->fill(p, n, v); });
  return y;
}

Tensor from_host(const Shape& s, const float* values, Device d) {
  DeviceContext& c = context(d);
  Tensor y = alloc(s, c);
  auto host = std::make_shared<std::vector<float>>(values, values + y.numel());
  Backend* be = c.backend.get();
  float* p = y.data();
  size_t bytes = y.nbytes();
  enqueue(c, "from_host", {}, {&y}, [=] { be->copy_from_host(p, host->data(), bytes); });
  return y;
}

void manual_seed(uint64_t seed) {
  std::lock_guard<std::mutex> lk(rng().mu);
  rng().seed = seed;
  rng().offset = 0;
}
uint64_t random_offset() {
  std::lock_guard<std::mutex> lk(rng().mu);
  return rng().offset;
}

Tensor randn(const Shape& s, Device d, float mean, float sd) {
  DeviceContext& c = context(d);
  Tensor y = alloc(s, c);
  auto [seed, off] = draw(static_cast<size_t>(y.numel()));
  Backend* be = c.backend.get();
  float* p = y.data();
  size_t n = static_cast<size_t>(y.numel());
  enqueue(c, "random_normal", {}, {&y}, [=] { be->random_normal(p, n, seed, off, mean, sd); });
  return y;
}

Tensor rand_uniform(const Shape& s, Device d, float lo, float hi) {
  DeviceContext& c = context(d);
  Tensor y = alloc(s, c);
  auto [seed, off] = draw(static_cast<size_t>(y.numel()));
  Backend* be = c.backend.get();
  float* p = y.data();
  size_t n = static_cast<size_t>(y.numel());
  enqueue(c, "random_uniform", {}, {&y}, [=] { be->random_uniform(p, n, seed, off, lo, hi); });
  return y;
}

// --- math ------------------------------------------------------------------------

Tensor matmul(const Tensor& a, const Tensor& b, bool ta, bool tb) {
  need_defined("matmul", {&a, &b});
  need_2d("matmul", a, "a", &b, "b");
  need_2d("matmul", b, "b", &a, "a");
  same_device("matmul", a, b);
  const int64_t M = ta ? a.dim(1) : a.dim(0), K = ta ? a.dim(0) : a.dim(1);
  const int64_t K2 = tb ? b.dim(1) : b.dim(0), N = tb ? b.dim(0) : b.dim(1);
  if (K != K2)
    throw ShapeError(detail::concat("matmul: shapes ", shape_str(a.shape()), ta ? "ᵀ" : "", " and ",
                                    shape_str(b.shape()), tb ? "ᵀ" : "", " do not fit (inner dimensions ", K,
                                    " and ", K2, ")"));
  DeviceContext& c = a.ctx();
  Tensor y = alloc({M, N}, c);  // y: (M, N)
  Backend* be = c.backend.get();
  const float *pa = a.data(), *pb = b.data();
  float* py = y.data();
  const int lda = static_cast<int>(a.dim(1)), ldb = static_cast<int>(b.dim(1));
  enqueue(c, "matmul", {&a, &b}, {&y}, [=] {
    be->gemm(ta, tb, int(M), int(N), int(K), 1.f, pa, lda, pb, ldb, 0.f, py, int(N));
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
  same_device("bias_add", x, b);
  DeviceContext& c = x.ctx();
  Tensor y = alloc(x.shape(), c);
  Backend* be = c.backend.get();
  const float *px = x.data(), *pb = b.data();
  float* py = y.data();
  const int rows = int(x.dim(0)), cols = int(x.dim(1));
  enqueue(c, "bias_add", {&x, &b}, {&y}, [=] { be->add_bias(px, pb, py, rows, cols); });
  if (detail::any_requires_grad({&x, &b}))
    detail::record(y, "bias_add", {x, b}, [](const Tensor& g) {
      return std::vector<Tensor>{g, sum_rows(g)};  // dx = g;  db(c) = Σ_r g(r,c)
    });
  return y;
}

Tensor sum_rows(const Tensor& x) {
  need_defined("sum_rows", {&x});
  need_2d("sum_rows", x, "x");
  DeviceContext& c = x.ctx();
  Tensor y = alloc({x.dim(1)}, c);
  Backend* be = c.backend.get();
  const float* px = x.data();
  float* py = y.data();
  const int rows = int(x.dim(0)), cols = int(x.dim(1));
  enqueue(c, "sum_rows", {&x}, {&y}, [=] { be->sum_rows(px, py, rows, cols); });
  return y;
}

Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b) {
  need_defined("linear", {&x, &w});
  need_2d("linear", x, "x", &w, "weight");
  need_2d("linear", w, "weight", &x, "x");
  if (x.dim(1) != w.dim(1))
    throw ShapeError(detail::concat("linear: input ", shape_str(x.shape()), " and weight ", shape_str(w.shape()),
                                    " do not fit (input has ", x.dim(1), " features, weight expects ", w.dim(1), ")"));
  same_device("linear", x, w);
  if (b.defined()) {
    same_device("linear", x, b);
    if (b.ndim() != 1 || b.dim(0) != w.dim(0))
      throw ShapeError(detail::concat("linear: weight ", shape_str(w.shape()), " and bias ", shape_str(b.shape()),
                                      " do not fit (bias must be (", w.dim(0), ",))"));
  }
  DeviceContext& c = x.ctx();
  const int64_t B = x.dim(0), in = x.dim(1), out = w.dim(0);
  Tensor y = alloc({B, out}, c);  // y: (B, out)
  Backend* be = c.backend.get();
  const float *px = x.data(), *pw = w.data(), *pb = b.defined() ? b.data() : nullptr;
  float* py = y.data();
  enqueue(c, "linear", {&x, &w, &b}, {&y}, [=] {
    float beta = 0.f;
    if (pb) {  // y = broadcast(b), then y += x·Wᵀ in the same GEMM
      be->add_bias(/*x=*/nullptr, pb, py, int(B), int(out));
      beta = 1.f;
    }
    be->gemm(false, /*trans_b=*/true, int(B), int(out), int(in), 1.f, px, int(in), pw, int(in), beta, py, int(out));
  });
  if (detail::any_requires_grad({&x, &w, &b}))
    detail::record(y, "linear", {x, w, b}, [x, w, b](const Tensor& g) {
      // g: (B, out).  dX = g·W (B, in);  dW = gᵀ·X (out, in);  db = Σ_r g (out)
      Tensor dx, dw, db;
      if (x.requires_grad()) dx = matmul(g, w);
      if (w.requires_grad()) dw = matmul(g, x, /*transpose_a=*/true);
      if (b.defined() && b.requires_grad()) db = sum_rows(g);
      return std::vector<Tensor>{dx, dw, db};
    });
  return y;
}

Tensor relu(const Tensor& x) {
  need_defined("relu", {&x});
  DeviceContext& c = x.ctx();
  Tensor y = alloc(x.shape(), c);
  Backend* be = c.backend.get();
  const float* px = x.data();
  float* py = y.data();
  size_t n = static_cast<size_t>(x.numel());
  enqueue(c, "relu", {&x}, {&y}, [=] { be->relu(px, py, n); });
  if (detail::any_requires_grad({&x}))
    detail::record(y, "relu", {x}, [x](const Tensor& g) {
      DeviceContext& c = x.ctx();
      Tensor dx = alloc(x.shape(), c);  // dx = g · (x > 0)
      Backend* be = c.backend.get();
      const float *px = x.data(), *pg = g.data();
      float* pd = dx.data();
      size_t n = static_cast<size_t>(x.numel());
      enqueue(c, "relu_backward", {&x, &g}, {&dx}, [=] { be->relu_backward(px, pg, pd, n); });
      return std::vector<Tensor>{dx};
    });
  return y;
}

Tensor l2_loss(const Tensor& pred, const Tensor& label) {
  need_defined("l2_loss", {&pred, &label});
  need_2d("l2_loss", pred, "prediction", &label, "label");
  same_device("l2_loss", pred, label);
  const int64_t B = pred.dim(0), C = pred.dim(1);
  const bool fits = label.numel() == B * C && label.ndim() >= 1 && label.dim(0) == B;
  if (!fits)
    throw ShapeError(detail::concat("l2_loss: prediction ", shape_str(pred.shape()), " and label ",
                                    shape_str(label.shape()), " do not fit (label needs ", B, " rows of ", C,
                                    " values)"));
  DeviceContext& c = pred.ctx();
  Tensor y = alloc({B}, c);  // loss: (B)
  Backend* be = c.backend.get();
  const float *pp = pred.data(), *pl = label.data();
  float* py = y.data();
  enqueue(c, "l2_loss", {&pred, &label}, {&y}, [=] { be->l2_loss(pp, pl, py, int(B), int(C)); });
  if (detail::any_requires_grad({&pred, &label}))
    detail::record(y, "l2_loss", {pred, label}, [pred, label](const Tensor& g) {
      // g: (B).  dpred(r,c) = g(r)·(pred − label)/C;  dlabel = −dpred
      DeviceContext& c = pred.ctx();
      Tensor dp = alloc(pred.shape(), c);
      Backend* be = c.backend.get();
      const float *pp = pred.data(), *pl = label.data(), *pg = g.data();
      float* pd = dp.data();
      const int B = int(pred.dim(0)), C = int(pred.dim(1));
      enqueue(c, "l2_loss_backward", {&pred, &label, &g}, {&dp}, [=] { be->l2_loss_backward(pp, pl, pg, pd, B, C); });
      Tensor dl;
      if (label.requires_grad()) {
        dl = scale(dp, -1.f);
        dl.impl()->shape = label.shape();
      }
      return std::vector<Tensor>{dp, dl};
    });
  return y;
}

Tensor add(const Tensor& a, const Tensor& b) {
  Tensor y = elementwise("add", a, b, 1.f, 1.f);
  if (detail::any_requires_grad({&a, &b}))
    detail::record(y, "add", {a, b}, [](const Tensor& g) { return std::vector<Tensor>{g, g}; });
  return y;
}

Tensor sub(const Tensor& a, const Tensor& b) {
  Tensor y = elementwise("sub", a, b, 1.f, -1.f);
  if (detail::any_requires_grad({&a, &b}))
    detail::record(y, "sub", {a, b}, [](const Tensor& g) { return std::vector<Tensor>{g, scale(g, -1.f)}; });
  return y;
}

Tensor scale(const Tensor& a, float s) {
  need_defined("scale", {&a});
  DeviceContext& c = a.ctx();
  Tensor y = alloc(a.shape(), c);
  Backend* be = c.backend.get();
  const float* pa = a.data();
  float* py = y.data();
  size_t n = static_cast<size_t>(a.numel());
  enqueue(c, "scale", {&a}, {&y}, [=] { be->axpby(s, pa, 0.f, nullptr, py, n); });
  if (detail::any_requires_grad({&a}))
    detail::record(y, "scale", {a}, [s](const Tensor& g) { return std::vector<Tensor>{scale(g, s)}; });
  return y;
}

Tensor add_scalar(const Tensor& a, float s) {
  need_defined("add_scalar", {&a});
  DeviceContext& c = a.ctx();
  Tensor y = alloc(a.shape(), c);
  Backend* be = c.backend.get();
  const float* pa = a.data();
  float* py = y.data();
  size_t n = static_cast<size_t>(a.numel());
  enqueue(c, "add_scalar", {&a}, {&y}, [=] { be->add_scalar(pa, s, py, n); });
  if (detail::any_requires_grad({&a}))
    detail::record(y, "add_scalar", {a}, [](const Tensor& g) { return std::vector<Tensor>{g}; });
  return y;
}

static Tensor reduce(const char* name, const Tensor& a, float scale_by) {
  need_defined(name, {&a});
  DeviceContext& c = a.ctx();
  Tensor y = alloc({}, c);  // shape ()
  Backend* be = c.backend.get();
  const float* pa = a.data();
  float* py = y.data();
  size_t n = static_cast<size_t>(a.numel());
  enqueue(c, name, {&a}, {&y}, [=] { be->sum(pa, py, n, scale_by); });
  if (detail::any_requires_grad({&a}))
    detail::record(y, name, {a}, [a, scale_by](const Tensor& g) {
      DeviceContext& c = a.ctx();
      Tensor da = alloc(a.shape(), c);  // da(i) = g · scale
      Backend* be = c.backend.get();
      const float* pg = g.data();
      float* pd = da.data();
      size_t n = static_cast<size_t>(a.numel());
      enqueue(c, "broadcast_scalar", {&g}, {&da}, [=] { be->broadcast_scalar(pg, scale_by, pd, n); });
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

// --- not differentiable --------------------------------------------------------

Tensor copy_to(const Tensor& a, Device d) {
  need_defined("copy_to", {&a});
  DeviceContext& dst_ctx = context(d);
  if (a.device().is_cuda() && d.is_cuda() && a.device() != d)  // stage through the host
    return copy_to(copy_to(a, Device::cpu(0)), d);
  Tensor y = alloc(a.shape(), dst_ctx);
  const void* src = a.data();
  void* dst = y.data();
  size_t bytes = a.nbytes();
  // Runs on the CUDA side when one side is a GPU, else on the destination.
  DeviceContext& run = a.device().is_cuda() ? a.ctx() : dst_ctx;
  Backend* be = run.backend.get();
  const bool to_host = a.device().is_cuda() && !d.is_cuda();
  const bool from_host = !a.device().is_cuda() && d.is_cuda();
  enqueue(run, "copy", {&a}, {&y}, [=] {
    if (to_host) be->copy_to_host(dst, src, bytes);
    else if (from_host) be->copy_from_host(dst, src, bytes);
    else be->copy(dst, src, bytes);
  });
  return y;
}

void copy_(Tensor& dst, const Tensor& src) {
  need_defined("copy_", {&dst, &src});
  if (dst.shape() != src.shape())
    throw ShapeError(detail::concat("copy_: shapes ", shape_str(dst.shape()), " and ", shape_str(src.shape()), " differ"));
  same_device("copy_", dst, src);
  DeviceContext& c = dst.ctx();
  Backend* be = c.backend.get();
  void* pd = dst.data();
  const void* ps = src.data();
  size_t bytes = src.nbytes();
  enqueue(c, "copy", {&src}, {&dst}, [=] { be->copy(pd, ps, bytes); });
}

void check_finite(const Tensor& a, const char* what) {
  need_defined("check_finite", {&a});
  DeviceContext& c = a.ctx();
  Backend* be = c.backend.get();
  const float* pa = a.data();
  size_t n = static_cast<size_t>(a.numel());
  enqueue(c, "check_finite", {&a}, {}, [=] { be->check_finite(pa, n, what); });
}

void sgd_update_(Tensor& w, const Tensor& g, Tensor& mom, float lr, float momentum, float wd, float rescale) {
  need_defined("sgd_update", {&w, &g});
  if (w.shape() != g.shape())
    throw ShapeError(detail::concat("sgd_update: weight ", shape_str(w.shape()), " and gradient ",
                                    shape_str(g.shape()), " differ"));
  same_device("sgd_update", w, g);
  if (momentum != 0.f && (!mom.defined() || mom.shape() != w.shape()))
    throw ShapeError("sgd_update: momentum buffer missing or of the wrong shape for weight " + shape_str(w.shape()));
  DeviceContext& c = w.ctx();
  Backend* be = c.backend.get();
  float* pw = w.data();
  const float* pg = g.data();
  float* pm = mom.defined() ? mom.data() : nullptr;
  size_t n = static_cast<size_t>(w.numel());
  enqueue(c, "sgd_update", {&g}, {&w, &mom}, [=] { be->sgd_update(pw, pg, pm, n, lr, momentum, wd, rescale); });
}

}  // namespace amlp
