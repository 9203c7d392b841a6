// kernels.h — the one declaration of every math kernel: a table of function
// pointers each backend fills (PyTorch's one registration per backend and
// operator; ggml's backend function table).
//
// A kernel takes the backend it runs on first (its body casts it to its own
// type for the device state it needs: the CUDA stream, cuBLAS handle, scratch
// buffers), then raw device pointers (an op's OpArgs, resolved when it runs)
// and sizes. It runs on the device's worker thread (CPU), or is launched from
// it onto the device's stream (CUDA). All matrices are row-major float32. No
// CUDA header appears here.
//
// A kernel lives in four files: its op's frontend (ops/*.cpp), this
// declaration, its CPU body and its CUDA body; its op adds a fifth, its
// public declaration in framework/ops.h (docs/design.md, "Adding an op"). Each backend's body file ends
// with a function that puts its kernels into the table (cpu/elementwise.cpp's
// add_elementwise_kernels, ...); the backend's constructor calls each, then
// complete_kernels(), which gives an entry left empty its composition below.
//
//   op (ops/elementwise.cpp):  be.kernels.relu_forward(be, k.in(0), k.out(0), k.scalar(0));
//   CPU (cpu/elementwise.cpp): void relu_forward(Backend&, const float* x, float* y, size_t n) { ... }
//                              t.relu_forward = relu_forward;   // in add_elementwise_kernels(t)
#pragma once
#include <cstddef>
#include <cstdint>

#include "framework/util/candidates.h"

namespace amlp {

struct Backend;

// One parameter of sgd_update_multi.
struct SgdParam {
  float* w;
  const float* g;
  float* mom;  // nullptr: no momentum buffer
  size_t n;
};

struct KernelTable {
  // C(M,N) = alpha * op(A) * op(B) + beta * C; op(A): (M,K), op(B): (K,N).
  // lda/ldb/ldc are row strides of A, B, C as stored. CUDA: TF32 tensor-core
  // math when tf32() (runtime.h) is on as the GEMM is launched.
  void (*gemm)(Backend&, bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
               const float* B, int ldb, float beta, float* C, int ldc) = nullptr;
  // y[i] = value
  void (*fill_value)(Backend&, float* y, size_t n, float value) = nullptr;
  // A Dense layer's forward: y(r,o) = act(sum_i x(r,i) * w(o,i) + b(o)); x (B,in),
  // w (out,in), b (out) or null, act the ReLU when `relu`. Composed (below):
  // the GEMM and one pass for the bias (and the ReLU); CUDA: one cuBLASLt
  // matmul with the bias and the ReLU in its epilogue.
  void (*dense_forward)(Backend&, const float* x, const float* w, const float* b, float* y, int B, int in, int out,
                        bool relu) = nullptr;
  // A Dense layer's weight and bias gradients: dw(out,in) = dz^T * x and
  // db(o) = sum_r dz(r,o) in column_sums' order (db may be null); dz (B,out),
  // x (B,in). Composed: the GEMM then column_sums; CUDA: one cuBLASLt matmul
  // whose epilogue reduces the bias gradient (BGRADB).
  void (*dense_grad_weight)(Backend&, const float* dz, const float* x, float* dw, float* db, int B, int in,
                            int out) = nullptr;
  // y(r,c) = x(r,c) + b(c)      x, y: (rows, cols); b: (cols). y may alias x;
  // x == nullptr broadcasts: y(r,c) = b(c).
  void (*add_bias)(Backend&, const float* x, const float* b, float* y, int rows, int cols) = nullptr;
  // y = max(x, 0)
  void (*relu_forward)(Backend&, const float* x, float* y, size_t n) = nullptr;
  // dx = dy * (x > 0)
  void (*relu_backward)(Backend&, const float* x, const float* dy, float* dx, size_t n) = nullptr;
  // Fused after a GEMM: y(r,c) = max(y(r,c) + b(c), 0) in place (b may be null).
  void (*bias_relu)(Backend&, float* y, const float* b, int rows, int cols) = nullptr;
  // Fused backward of bias_relu: dz = dy * (y > 0), and db(c) = sum_r dz(r,c)
  // in the same pass, in column_sums' order (db may be null). dz may alias dy.
  void (*relu_backward_sum_rows)(Backend&, const float* y, const float* dy, float* dz, float* db, int rows,
                                 int cols) = nullptr;
  // relu_backward_sum_rows with dy the outer product g·w: dz(r,c) = (g(r)·w(c))·(y(r,c) > 0),
  // db(c) = Σ_r dz(r,c) (db may be null); g (rows), w (cols). The input gradient of a layer
  // of one output unit through the ReLU before it, bitwise the GEMM of K = 1 (its inputs
  // rounded to TF32 first under tf32()) and relu_backward_sum_rows. Null: no such kernel.
  void (*relu_backward_outer_sum_rows)(Backend&, const float* y, const float* g, const float* w, float* dz, float* db,
                                       int rows, int cols) = nullptr;
  // linear_relu's forward that also keeps its ReLU's mask, relu_mask_words()
  // 32-bit words in the backend's own layout, for dense_grad_input_relu. A
  // backend whose dense_grad_input_relu reads y itself (the CPU) leaves it
  // empty, and no mask is made. CUDA: one cuBLASLt matmul, RELU_AUX_BIAS.
  void (*dense_forward_relu_mask)(Backend&, const float* x, const float* w, const float* b, float* y,
                                  uint32_t* mask, int B, int in, int out) = nullptr;
  // The input gradient of a Dense layer whose input y came out of the ReLU
  // of the layer below (linear_relu), with that ReLU's backward and that
  // layer's bias gradient:  dz(r,i) = (sum_o g(r,o) * w(o,i)) * (y(r,i) > 0),
  // db(i) = sum_r dz(r,i) (db may be null); g (B,out), w (out,in), y and dz
  // (B,in). mask: what dense_forward_relu_mask kept for y, or null. Composed:
  // matmul's GEMM into dz, then relu_backward_sum_rows in place (bitwise the
  // two ops); CUDA with a mask: one cuBLASLt matmul, DRELU_BGRAD.
  void (*dense_grad_input_relu)(Backend&, const float* g, const float* w, const float* y, const uint32_t* mask,
                                float* dz, float* db, int B, int in, int out) = nullptr;
  // loss(r) = 0.5 * mean_c (pred(r,c) - label(r,c))^2, and in the same pass,
  // when dpred is not null, the gradient for a unit head:
  // dpred(r,c) = (pred(r,c) - label(r,c)) / cols (l2_loss_backward's with dloss = 1, bitwise).
  void (*l2_loss_forward)(Backend&, const float* pred, const float* label, float* loss, float* dpred, int rows,
                          int cols) = nullptr;
  // dpred(r,c) = dloss(r) * (pred(r,c) - label(r,c)) / cols
  void (*l2_loss_backward)(Backend&, const float* pred, const float* label, const float* dloss, float* dpred,
                           int rows, int cols) = nullptr;
  // y = alpha * a + beta * b   (b may be null: y = alpha * a);  y may alias a or b
  void (*axpby)(Backend&, float alpha, const float* a, float beta, const float* b, float* y, size_t n) = nullptr;
  // y = a * b   (y may alias a or b)
  void (*multiply)(Backend&, const float* a, const float* b, float* y, size_t n) = nullptr;
  // y = x + s
  void (*scalar_add)(Backend&, const float* x, float s, float* y, size_t n) = nullptr;
  // y = xs[0] + xs[1] + ... + xs[k-1], added in that order (k >= 1; y aliases
  // none of them; xs a host array of pointers on this device), so every
  // caller with the same inputs gets the same bits.
  void (*sum_n)(Backend&, const float* const* xs, int k, float* y, size_t n) = nullptr;
  // y(c) = sum_r x(r,c)                      (bias gradients)
  void (*column_sums)(Backend&, const float* x, float* y, int rows, int cols) = nullptr;
  // y[0] = scale * sum_i x[i]               (sum, mean)
  void (*sum_scaled)(Backend&, const float* x, float* y, size_t n, float scale) = nullptr;
  // y[i] = x[0] * scale                     (gradient of sum/mean)
  void (*broadcast_scalar)(Backend&, const float* x, float scale, float* y, size_t n) = nullptr;
  // Philox4x32-10 numbers; (seed, offset) fully determine them on every backend.
  void (*random_normal)(Backend&, float* y, size_t n, uint64_t seed, uint64_t offset, float mean,
                        float stddev) = nullptr;
  void (*random_uniform)(Backend&, float* y, size_t n, uint64_t seed, uint64_t offset, float lo, float hi) = nullptr;
  // Gluon SGD:  g' = rescale*g + wd*w;  momentum == 0: w -= lr*g'
  //             else mom = momentum*mom - lr*g';  w += mom
  void (*sgd_update)(Backend&, float* w, const float* g, float* mom, size_t n, float lr, float momentum, float wd,
                     float rescale) = nullptr;
  // The same step for k parameters at once (one launch on CUDA); composed:
  // one sgd_update each, in order.
  void (*sgd_update_multi)(Backend&, const SgdParam* ps, int k, float lr, float momentum, float wd,
                           float rescale) = nullptr;
  // Elementwise check that every value is finite; throws (on the worker) if
  // not, naming the first one and `what`. CUDA waits for the verdict.
  void (*require_finite)(Backend&, const float* x, size_t n, const char* what) = nullptr;
};

// The table of the backend a composition runs on (backend.cpp).
const KernelTable& kernels_of(Backend& be);

// The size of a ReLU mask of a (B, out) output: a bit per element, each of
// the B rows padded to a multiple of 128 bits (cuBLASLt's leading dimension).
inline size_t relu_mask_words(int B, int out) {
  return static_cast<size_t>(B) * ((static_cast<size_t>(out) + 127) / 128 * 4);
}

// The compositions a backend gets for an entry it leaves empty (the CPU's
// fused kernels are these); a backend's own body may fall back to them.
namespace composed {

inline void dense_forward(Backend& be, const float* x, const float* w, const float* b, float* y, int B, int in,
                          int out, bool relu) {
  const KernelTable& k = kernels_of(be);
  if (relu) {
    k.gemm(be, false, /*trans_b=*/true, B, out, in, 1.f, x, in, w, in, 0.f, y, out);
    k.bias_relu(be, y, b, B, out);  // y = max(y + b, 0): one pass over y
    return;
  }
  float beta = 0.f;
  if (b) {  // y = broadcast(b), then y += x·Wᵀ in the same GEMM
    k.add_bias(be, /*x=*/nullptr, b, y, B, out);
    beta = 1.f;
  }
  k.gemm(be, false, /*trans_b=*/true, B, out, in, 1.f, x, in, w, in, beta, y, out);
}

inline void dense_grad_weight(Backend& be, const float* dz, const float* x, float* dw, float* db, int B, int in,
                              int out) {
  const KernelTable& k = kernels_of(be);
  k.gemm(be, /*trans_a=*/true, false, out, in, B, 1.f, dz, out, x, in, 0.f, dw, in);  // dW = dzᵀ·X
  if (db) k.column_sums(be, dz, db, B, out);
}

inline void dense_grad_input_relu(Backend& be, const float* g, const float* w, const float* y, const uint32_t*,
                                  float* dz, float* db, int B, int in, int out) {
  const KernelTable& k = kernels_of(be);
  if (out == 1 && k.relu_backward_outer_sum_rows && candidate_on(kCandidateOutGrad)) {
    k.relu_backward_outer_sum_rows(be, y, g, w, dz, db, B, in);  // the same numbers in one pass
    return;
  }
  k.gemm(be, false, false, B, in, out, 1.f, g, out, w, in, 0.f, dz, in);  // dz = g·W, as matmul(g, w)
  k.relu_backward_sum_rows(be, y, dz, dz, db, B, in);                     // dz *= (y > 0); db = Σ_r dz
}

inline void sgd_update_multi(Backend& be, const SgdParam* ps, int n, float lr, float momentum, float wd,
                             float rescale) {
  const KernelTable& k = kernels_of(be);
  for (int i = 0; i < n; ++i) k.sgd_update(be, ps[i].w, ps[i].g, ps[i].mom, ps[i].n, lr, momentum, wd, rescale);
}

}  // namespace composed

// After a backend's fillers ran: every entry with a composition that the
// backend left empty gets it.
inline void complete_kernels(KernelTable& t) {
  if (!t.dense_forward) t.dense_forward = composed::dense_forward;
  if (!t.dense_grad_weight) t.dense_grad_weight = composed::dense_grad_weight;
  if (!t.dense_grad_input_relu) t.dense_grad_input_relu = composed::dense_grad_input_relu;
  if (!t.sgd_update_multi) t.sgd_update_multi = composed::sgd_update_multi;
}

}  // namespace amlp
