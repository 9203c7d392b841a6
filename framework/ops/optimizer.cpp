// optimizer.cpp — sgd_update_, the in-place SGD step of one parameter
// (nn/sgd.h drives it). Kernels: cpu/optimizer.cpp, cuda/optimizer.cu.
#include "framework/ops/op.h"

namespace amlp {

using namespace ops;

void sgd_update_(Tensor& w, const Tensor& g, Tensor& mom, float lr, float momentum, float wd, float rescale) {
  need_defined("sgd_update", {&w, &g});
  if (w.shape() != g.shape())
    throw ShapeError(detail::concat("sgd_update: weight ", shape_str(w.shape()), " and gradient ",
                                    shape_str(g.shape()), " differ"));
  if (momentum != 0.f && (!mom.defined() || mom.shape() != w.shape()))
    throw ShapeError("sgd_update: momentum buffer missing or of the wrong shape for weight " + shape_str(w.shape()));
  same_device("sgd_update", {&w, &g, &mom});
  const size_t n = count(w);
  // In place: w (and the momentum) are read and written.
  enqueue(ctx_of(w), "sgd_update", {&g, &w, &mom}, {&w, &mom}, [=](Backend& be, const OpArgs& k) {
    be.sgd_update(k.out(0), k.in(0), k.out(1), n, lr, momentum, wd, rescale);
  });
}

}  // namespace amlp
