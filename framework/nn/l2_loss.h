// l2_loss.h — Gluon's L2Loss: per sample 0.5·(ŷ − y)², averaged over the
// non-batch axes.  pred: (B, C), label: (B, C) or (B) when C == 1 → loss: (B)
#pragma once
#include "framework/ops.h"

namespace amlp {

struct L2Loss {
  Tensor operator()(const Tensor& pred, const Tensor& label) const { return l2_loss(pred, label); }
};

}  // namespace amlp
