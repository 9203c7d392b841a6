// reduce.cpp — CPU sums (accumulated in double for sum/mean).
#include <cstring>

#include "framework/cpu/cpu_backend.h"

namespace amlp::cpu {

void CpuBackend::sum_rows(const float* x, float* y, int rows, int cols) {
  std::memset(y, 0, sizeof(float) * cols);
  for (int r = 0; r < rows; ++r) {
    const float* xr = x + static_cast<size_t>(r) * cols;
    for (int c = 0; c < cols; ++c) y[c] += xr[c];
  }
}

void CpuBackend::sum(const float* x, float* y, size_t n, float scale) {
  double s = 0.0;
  for (size_t i = 0; i < n; ++i) s += x[i];
  y[0] = static_cast<float>(s * scale);
}

void CpuBackend::broadcast_scalar(const float* x, float scale, float* y, size_t n) {
  const float v = x[0] * scale;
  for (size_t i = 0; i < n; ++i) y[i] = v;
}

}  // namespace amlp::cpu
