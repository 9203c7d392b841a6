// reduce.cpp — CPU sums (accumulated in double for sum/mean).
#include <cstring>

#include "framework/cpu/cpu_backend.h"

namespace amlp::cpu {

namespace {

void column_sums(Backend&, const float* x, float* y, int rows, int cols) {
  std::memset(y, 0, sizeof(float) * cols);
  for (int r = 0; r < rows; ++r) {
    const float* xr = x + static_cast<size_t>(r) * cols;
    for (int c = 0; c < cols; ++c) y[c] += xr[c];
  }
}

void sum_scaled(Backend&, const float* x, float* y, size_t n, float scale) {
  double s = 0.0;
  for (size_t i = 0; i < n; ++i) s += x[i];
  y[0] = static_cast<float>(s * scale);
}

void broadcast_scalar(Backend&, const float* x, float scale, float* y, size_t n) {
  const float v = x[0] * scale;
  for (size_t i = 0; i < n; ++i) y[i] = v;
}

}  // namespace

void add_reduce_kernels(KernelTable& t) {
  t.column_sums = column_sums;
  t.sum_scaled = sum_scaled;
  t.broadcast_scalar = broadcast_scalar;
}

}  // namespace amlp::cpu
