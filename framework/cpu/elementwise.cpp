// elementwise.cpp — CPU kernels that map each element on its own.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "framework/cpu/cpu_backend.h"
#include "framework/error.h"
#include "framework/runtime.h"

namespace amlp::cpu {

namespace {

void fill_value(Backend&, float* y, size_t n, float v) {
  for (size_t i = 0; i < n; ++i) y[i] = v;
}

// y(r,c) = x(r,c) + b(c); x == nullptr broadcasts b into every row.
void add_bias(Backend&, const float* x, const float* b, float* y, int rows, int cols) {
  for (int r = 0; r < rows; ++r) {
    float* yr = y + static_cast<size_t>(r) * cols;
    if (!x) {
      std::memcpy(yr, b, sizeof(float) * static_cast<size_t>(cols));
      continue;
    }
    const float* xr = x + static_cast<size_t>(r) * cols;
    for (int c = 0; c < cols; ++c) yr[c] = xr[c] + b[c];
  }
}

void relu_forward(Backend&, const float* x, float* y, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;
}

void relu_backward(Backend&, const float* x, const float* dy, float* dx, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const float g = dy[i];  // unconditional load: the select vectorises, a branch would not
    dx[i] = x[i] > 0.f ? g : 0.f;
  }
}

// One pass over the GEMM's output instead of two (bias, then ReLU).
void bias_relu(Backend&, float* y, const float* b, int rows, int cols) {
  for (int r = 0; r < rows; ++r) {
    float* yr = y + static_cast<size_t>(r) * cols;
    if (b)
      for (int c = 0; c < cols; ++c) {
        const float v = yr[c] + b[c];
        yr[c] = v > 0.f ? v : 0.f;
      }
    else
      for (int c = 0; c < cols; ++c) yr[c] = yr[c] > 0.f ? yr[c] : 0.f;
  }
}

// dz and the bias gradient in one pass (db's sums in sum_rows' order).
void relu_backward_sum_rows(Backend&, const float* y, const float* dy, float* dz, float* db, int rows, int cols) {
  if (db) std::memset(db, 0, sizeof(float) * static_cast<size_t>(cols));
  for (int r = 0; r < rows; ++r) {
    const size_t o = static_cast<size_t>(r) * cols;
    for (int c = 0; c < cols; ++c) {
      const float g = dy[o + c];
      dz[o + c] = y[o + c] > 0.f ? g : 0.f;
    }
    if (db)
      for (int c = 0; c < cols; ++c) db[c] += dz[o + c];
  }
}

// The same loop with dy(r,c) = g(r)·w(c), the product the GEMM of K = 1 forms
// (one rounding; under tf32() of inputs rounded as cpu/linalg.cpp's GEMM rounds them).
void relu_backward_outer_sum_rows(Backend&, const float* y, const float* g, const float* w, float* dz, float* db,
                                  int rows, int cols) {
  const bool t = tf32();
  if (db) std::memset(db, 0, sizeof(float) * static_cast<size_t>(cols));
  for (int r = 0; r < rows; ++r) {
    const size_t o = static_cast<size_t>(r) * cols;
    const float gr = t ? round_to_tf32(g[r]) : g[r];
    for (int c = 0; c < cols; ++c) {
      const float wc = t ? round_to_tf32(w[c]) : w[c];
      dz[o + c] = y[o + c] > 0.f ? gr * wc : 0.f;
    }
    if (db)
      for (int c = 0; c < cols; ++c) db[c] += dz[o + c];
  }
}

void axpby(Backend&, float alpha, const float* a, float beta, const float* b, float* y, size_t n) {
  if (b)
    for (size_t i = 0; i < n; ++i) y[i] = alpha * a[i] + beta * b[i];
  else
    for (size_t i = 0; i < n; ++i) y[i] = alpha * a[i];
}

void multiply(Backend&, const float* a, const float* b, float* y, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] = a[i] * b[i];
}

void scalar_add(Backend&, const float* x, float s, float* y, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] = x[i] + s;
}

// Chunk by chunk, so each chunk of y stays in cache while the inputs stream
// past it; per element the additions run left to right all the same.
void sum_n(Backend&, const float* const* xs, int k, float* y, size_t n) {
  constexpr size_t kChunk = 4096;  // 16 KiB of y
  for (size_t o = 0; o < n; o += kChunk) {
    const size_t m = std::min(kChunk, n - o);
    float* yo = y + o;
    const float* x0 = xs[0] + o;
    for (size_t i = 0; i < m; ++i) yo[i] = x0[i];
    for (int j = 1; j < k; ++j) {
      const float* xj = xs[j] + o;
      for (size_t i = 0; i < m; ++i) yo[i] += xj[i];
    }
  }
}

void require_finite(Backend&, const float* x, size_t n, const char* what) {
  for (size_t i = 0; i < n; ++i)
    if (!std::isfinite(x[i])) throw Error(detail::concat("non-finite value ", x[i], " at index ", i, " of ", what));
}

}  // namespace

void add_elementwise_kernels(KernelTable& t) {
  t.fill_value = fill_value;
  t.add_bias = add_bias;
  t.relu_forward = relu_forward;
  t.relu_backward = relu_backward;
  t.bias_relu = bias_relu;
  t.relu_backward_sum_rows = relu_backward_sum_rows;
  t.relu_backward_outer_sum_rows = relu_backward_outer_sum_rows;
  t.axpby = axpby;
  t.multiply = multiply;
  t.scalar_add = scalar_add;
  t.sum_n = sum_n;
  t.require_finite = require_finite;
}

}  // namespace amlp::cpu
