// loss.cpp — l2_loss, Gluon's L2Loss per sample. Kernels: cpu/loss.cpp,
// cuda/loss.cu.
#include "framework/ops/op.h"

namespace amlp {

using namespace ops;

Tensor l2_loss(const Tensor& pred, const Tensor& label) {
  need_defined("l2_loss", {&pred, &label});
  need_2d("l2_loss", pred, "prediction", &label, "label");
  same_device("l2_loss", {&pred, &label});
  const int64_t B = pred.dim(0), C = pred.dim(1);
  const bool fits = label.numel() == B * C && label.ndim() >= 1 && label.dim(0) == B;
  if (!fits)
    throw ShapeError(detail::concat("l2_loss: prediction ", shape_str(pred.shape()), " and label ",
                                    shape_str(label.shape()), " do not fit (label needs ", B, " rows of ", C,
                                    " values)"));
  const int rows = dim_int("l2_loss", pred, 0), cols = dim_int("l2_loss", pred, 1);
  Tensor y = alloc({B}, ctx_of(pred));  // loss: (B)
  const bool grad = detail::any_requires_grad({&pred, &label});
  // With a gradient to come, the same kernel writes it for a head of ones
  // (dpu): a backward from Tensor::backward() then queues nothing for the loss.
  Tensor dpu = grad && pred.requires_grad() ? alloc(pred.shape(), ctx_of(pred)) : Tensor();
  enqueue(ctx_of(pred), "l2_loss", {&pred, &label}, {&y, &dpu}, dims({rows, cols}), [](Backend& be, const OpArgs& k) {
    be.kernels.l2_loss_forward(be, k.in(0), k.in(1), k.out(0), k.out(1), k.scalar_int(0), k.scalar_int(1));
  });
  if (!grad) return y;
  // dlabel = −dpred
  auto label_grad = [label](const Tensor& dp) {
    Tensor dl;
    if (label.requires_grad()) {
      dl = scale(dp, -1.f);
      dl.impl()->shape = label.shape();
    }
    return dl;
  };
  auto unit = [dpu, label_grad] { return std::vector<Tensor>{dpu, label_grad(dpu)}; };
  detail::record(
      y, "l2_loss", {pred, label},
      [pred, label, rows, cols, label_grad](const Tensor& g) {
        // g: (B).  dpred(r,c) = g(r)·(pred − label)/C
        Tensor dp = alloc(pred.shape(), ctx_of(pred));
        enqueue(ctx_of(pred), "l2_loss_backward", {&pred, &label, &g}, {&dp}, dims({rows, cols}),
                [](Backend& be, const OpArgs& k) {
          be.kernels.l2_loss_backward(be, k.in(0), k.in(1), k.in(2), k.out(0), k.scalar_int(0), k.scalar_int(1));
        });
        return std::vector<Tensor>{dp, label_grad(dp)};
      },
      dpu.defined() ? std::function<std::vector<Tensor>()>(unit) : nullptr);
  return y;
}

}  // namespace amlp
