// optimizer.cpp — both SGD ops: sgd_update_, the in-place step of one
// parameter, and sgd_update_multi_, of a list as one op, which SGD::step
// (nn/sgd.cpp) uses. Kernels: cpu/optimizer.cpp, cuda/optimizer.cu.
#include "framework/ops/op.h"

namespace amlp {

using namespace ops;

namespace {

void check_param(const char* op, const Tensor& w, const Tensor& g, const Tensor& mom, float momentum) {
  need_defined(op, {&w, &g});
  if (w.shape() != g.shape())
    throw ShapeError(detail::concat(op, ": weight ", shape_str(w.shape()), " and gradient ", shape_str(g.shape()),
                                    " differ"));
  if (momentum != 0.f && (!mom.defined() || mom.shape() != w.shape()))
    throw ShapeError(detail::concat(op, ": momentum buffer missing or of the wrong shape for weight ",
                                    shape_str(w.shape())));
  same_device(op, {&w, &g, &mom});
}

}  // namespace

void sgd_update_(Tensor& w, const Tensor& g, Tensor& mom, float lr, float momentum, float wd, float rescale) {
  check_param("sgd_update", w, g, mom, momentum);
  const size_t n = count(w);
  // In place: w (and the momentum) are read and written.
  const OpScalars scalars{n, scalar_bits(lr), scalar_bits(momentum), scalar_bits(wd), scalar_bits(rescale)};
  enqueue(ctx_of(w), "sgd_update", {&g, &w, &mom}, {&w, &mom}, scalars, [](Backend& be, const OpArgs& k) {
    be.kernels.sgd_update(be, k.out(0), k.in(0), k.out(1), k.scalar(0), k.scalar_float(1), k.scalar_float(2), k.scalar_float(3),
                  k.scalar_float(4));
  });
}

void sgd_update_multi_(const std::vector<Tensor*>& ws, const std::vector<const Tensor*>& gs,
                       const std::vector<Tensor*>& moms, float lr, float momentum, float wd, float rescale) {
  const char* op = "sgd_update_multi";
  if (ws.empty() || gs.size() != ws.size() || (!moms.empty() && moms.size() != ws.size()))
    throw Error(detail::concat(op, ": ", ws.size(), " weights, ", gs.size(), " gradients and ", moms.size(),
                               " momentum buffers (none, or one per weight)"));
  const Tensor none;
  std::vector<const Tensor*> reads, writes;
  std::vector<size_t> ns;
  for (size_t i = 0; i < ws.size(); ++i) {
    const Tensor& mom = moms.empty() ? none : *moms[i];
    check_param(op, *ws[i], *gs[i], mom, momentum);
    same_device(op, {ws[0], ws[i]});
    ns.push_back(count(*ws[i]));
  }
  // Reads: the gradients, the weights, the momenta; writes: the weights, the momenta (in place).
  for (const Tensor* g : gs) reads.push_back(g);
  for (Tensor* w : ws) reads.push_back(w), writes.push_back(w);
  for (size_t i = 0; i < ws.size(); ++i) reads.push_back(moms.empty() ? &none : moms[i]);
  for (size_t i = 0; i < ws.size(); ++i) writes.push_back(moms.empty() ? &none : moms[i]);
  // Scalars: the count, the four factors, then each parameter's size.
  OpScalars scalars{ws.size(), scalar_bits(lr), scalar_bits(momentum), scalar_bits(wd), scalar_bits(rescale)};
  for (uint64_t n : ns) scalars.push_back(n);
  enqueue(ctx_of(*ws[0]), op, reads, writes, std::move(scalars), [](Backend& be, const OpArgs& a) {
    const size_t k = a.scalar(0);
    std::vector<SgdParam> ps(k);
    for (size_t i = 0; i < k; ++i) ps[i] = {a.out(i), a.in(i), a.out(k + i), a.scalar(5 + i)};
    be.kernels.sgd_update_multi(be, ps.data(), static_cast<int>(k), a.scalar_float(1), a.scalar_float(2), a.scalar_float(3),
                        a.scalar_float(4));
  });
}

}  // namespace amlp
