// optimizer.cpp — the CPU SGD step (Gluon semantics, backend.h in core/).
#include "framework/cpu/cpu_backend.h"

namespace amlp::cpu {

void CpuBackend::sgd_update(float* w, const float* g, float* mom, size_t n, float lr, float momentum, float wd,
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

}  // namespace amlp::cpu
