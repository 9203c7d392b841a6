// optimizer.cpp — the CPU SGD step (Gluon semantics, core/backend/kernels.h).
#include "framework/cpu/cpu_backend.h"

namespace amlp::cpu {

namespace {

void sgd_update(Backend&, float* w, const float* g, float* mom, size_t n, float lr, float momentum, float wd,
                            float rescale) {
  if (momentum == 0.f || !mom) {
    for (size_t i = 0; i < n; ++i) w[i] -= lr * (rescale * g[i] + wd * w[i]);
  } else {
    for (size_t i = 0; i < n; ++i) {
      mom[i] = momentum * mom[i] - lr * (rescale * g[i] + wd * w[i]);
      w[i] += mom[i];
    }
  }
}

}  // namespace

void add_optimizer_kernels(KernelTable& t) {
  t.sgd_update = sgd_update;
}

}  // namespace amlp::cpu
