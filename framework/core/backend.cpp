// backend.cpp — the kernels a backend may leave to the others' composition
// (backend.h): a Dense layer's forward and its weight gradient as a GEMM and a
// pass, for devices without a fused kernel (the CPU).
#include "framework/core/backend.h"

namespace amlp {

void Backend::linear(const float* x, const float* w, const float* b, float* y, int B, int in, int out, bool relu) {
  if (relu) {
    gemm(false, /*trans_b=*/true, B, out, in, 1.f, x, in, w, in, 0.f, y, out);
    bias_relu(y, b, B, out);  // y = max(y + b, 0): one pass over y
    return;
  }
  float beta = 0.f;
  if (b) {  // y = broadcast(b), then y += x·Wᵀ in the same GEMM
    add_bias(/*x=*/nullptr, b, y, B, out);
    beta = 1.f;
  }
  gemm(false, /*trans_b=*/true, B, out, in, 1.f, x, in, w, in, beta, y, out);
}

void Backend::linear_grad_weight(const float* dz, const float* x, float* dw, float* db, int B, int in, int out) {
  gemm(/*trans_a=*/true, false, out, in, B, 1.f, dz, out, x, in, 0.f, dw, in);  // dW = dzᵀ·X
  if (db) sum_rows(dz, db, B, out);
}

}  // namespace amlp
