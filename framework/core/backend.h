// backend.h — the kernel table each device fills (ggml-backend style).
//
// Kernels take raw device pointers (an op's OpArgs, resolved when it runs)
// and run on the device's worker thread (CPU), or are launched from it onto
// the device's stream (CUDA). All matrices are row-major float32. No CUDA
// header appears here: CPU-only code never sees one. Each concept's kernels
// live in a file of the same name per backend: cpu/elementwise.cpp and
// cuda/elementwise.cu, cpu/loss.cpp and cuda/loss.cu, ...
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "framework/core/memory.h"
#include "framework/core/stream_sync.h"

namespace amlp {

// One recorded point of a device's timeline: the CPU's clock reading, or a
// CUDA event (opaque here: no CUDA header in this file).
struct TimerPoint {
  double host_s = 0;       // CPU: steady_clock seconds when the op ran
  void* event = nullptr;   // CUDA: its cudaEvent_t
  bool recorded = false;   // set by timer_record (the op ran)
};

struct Backend : RawAllocator, StreamSync {
  ~Backend() override = default;

  // C(M,N) = alpha * op(A) * op(B) + beta * C; op(A): (M,K), op(B): (K,N).
  // lda/ldb/ldc are row strides of A, B, C as stored.
  virtual void gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A,
                    int lda, const float* B, int ldb, float beta, float* C, int ldc) = 0;
  virtual void fill(float* y, size_t n, float value) = 0;
  // A Dense layer's forward: y(r,o) = act(sum_i x(r,i) * w(o,i) + b(o)); x (B,in),
  // w (out,in), b (out) or null, act the ReLU when `relu`. By default the GEMM
  // and one pass for the bias (and the ReLU); CUDA: one cuBLASLt matmul with
  // the bias and the ReLU in its epilogue.
  virtual void linear(const float* x, const float* w, const float* b, float* y, int B, int in, int out, bool relu);
  // A Dense layer's weight and bias gradients: dw(out,in) = dz^T * x and
  // db(o) = sum_r dz(r,o) in sum_rows' order (db may be null); dz (B,out), x (B,in).
  // By default the GEMM then sum_rows; CUDA: one cuBLASLt matmul whose
  // epilogue reduces the bias gradient (BGRADB).
  virtual void linear_grad_weight(const float* dz, const float* x, float* dw, float* db, int B, int in, int out);
  // y(r,c) = x(r,c) + b(c)      x, y: (rows, cols); b: (cols). y may alias x;
  // x == nullptr broadcasts: y(r,c) = b(c).
  virtual void add_bias(const float* x, const float* b, float* y, int rows, int cols) = 0;
  virtual void relu(const float* x, float* y, size_t n) = 0;
  // dx = dy * (x > 0)
  virtual void relu_backward(const float* x, const float* dy, float* dx, size_t n) = 0;
  // Fused after a GEMM: y(r,c) = max(y(r,c) + b(c), 0) in place (b may be null).
  virtual void bias_relu(float* y, const float* b, int rows, int cols) = 0;
  // Fused backward of bias_relu: dz = dy * (y > 0), and db(c) = sum_r dz(r,c)
  // in the same pass, in sum_rows' order (db may be null).
  virtual void relu_backward_sum_rows(const float* y, const float* dy, float* dz, float* db, int rows, int cols) = 0;
  // loss(r) = 0.5 * mean_c (pred(r,c) - label(r,c))^2, and in the same pass,
  // when dpred is not null, the gradient for a unit head:
  // dpred(r,c) = (pred(r,c) - label(r,c)) / cols (l2_loss_backward's with dloss = 1, bitwise).
  virtual void l2_loss(const float* pred, const float* label, float* loss, float* dpred, int rows, int cols) = 0;
  // dpred(r,c) = dloss(r) * (pred(r,c) - label(r,c)) / cols
  virtual void l2_loss_backward(const float* pred, const float* label, const float* dloss,
                                float* dpred, int rows, int cols) = 0;
  // y = alpha * a + beta * b   (b may be null: y = alpha * a);  y may alias a or b
  virtual void axpby(float alpha, const float* a, float beta, const float* b, float* y, size_t n) = 0;
  // y = x + s
  virtual void add_scalar(const float* x, float s, float* y, size_t n) = 0;
  // y = xs[0] + xs[1] + ... + xs[k-1], added in that order (k >= 1; y aliases
  // none of them), so every caller with the same inputs gets the same bits.
  virtual void sum_n(const float* const* xs, int k, float* y, size_t n) = 0;
  // y = the sum of x over every rank of `comm` (an ncclComm_t): this device's
  // part of an NCCL all-reduce, on its stream. CUDA devices in a build with
  // NCCL; elsewhere it throws.
  virtual void all_reduce_nccl(const float* x, float* y, size_t n, void* comm) = 0;
  // y(c) = sum_r x(r,c)                      (bias gradients)
  virtual void sum_rows(const float* x, float* y, int rows, int cols) = 0;
  // y[0] = scale * sum_i x[i]               (sum, mean)
  virtual void sum(const float* x, float* y, size_t n, float scale) = 0;
  // y[i] = x[0] * scale                     (gradient of sum/mean)
  virtual void broadcast_scalar(const float* x, float scale, float* y, size_t n) = 0;
  // Philox4x32-10 numbers; (seed, offset) fully determine them on every backend.
  virtual void random_normal(float* y, size_t n, uint64_t seed, uint64_t offset, float mean,
                             float stddev) = 0;
  virtual void random_uniform(float* y, size_t n, uint64_t seed, uint64_t offset, float lo,
                              float hi) = 0;
  // Gluon SGD:  g' = rescale*g + wd*w;  momentum == 0: w -= lr*g'
  //             else mom = momentum*mom - lr*g';  w += mom
  virtual void sgd_update(float* w, const float* g, float* mom, size_t n, float lr, float momentum,
                          float wd, float rescale) = 0;
  // The same step for k parameters at once (one launch on CUDA); by default
  // one sgd_update each, in order.
  struct SgdParam {
    float* w;
    const float* g;
    float* mom;  // nullptr: no momentum buffer
    size_t n;
  };
  virtual void sgd_update_multi(const SgdParam* ps, int k, float lr, float momentum, float wd, float rescale) {
    for (int i = 0; i < k; ++i) sgd_update(ps[i].w, ps[i].g, ps[i].mom, ps[i].n, lr, momentum, wd, rescale);
  }
  // Same-device copy, and copies between this device and host memory. The
  // first three have finished when they return (host memory is pageable).
  virtual void copy(void* dst, const void* src, size_t bytes) = 0;
  virtual void copy_to_host(void* host_dst, const void* src, size_t bytes) = 0;
  virtual void copy_from_host(void* dst, const void* host_src, size_t bytes) = 0;
  // Into host memory from alloc_host(): only launched; complete with the op.
  virtual void copy_to_host_async(void* host_dst, const void* src, size_t bytes) = 0;
  // Host memory the device can copy into without the frontend waiting (pinned
  // on CUDA). Frontend thread.
  virtual void* alloc_host(size_t bytes) = 0;
  virtual void free_host(void* p) noexcept = 0;
  // TF32 tensor-core math for GEMMs (runtime.h set_tf32), any thread; the
  // next GEMM launched uses it. No effect where there is none (the CPU).
  virtual void set_tf32(bool /*on*/) {}
  // Elementwise check that every value is finite; throws (on the worker) if not.
  virtual void check_finite(const float* x, size_t n, const char* what) = 0;

  // Timers (DeviceTimer): a point on the device's own timeline, recorded by
  // an op's kernel in order with the others (CPU: the worker's clock; CUDA: a
  // timing event on the stream). timer_seconds reads two points of this
  // device once both ops completed; timer_release gives a point's resources
  // back (any thread).
  virtual void timer_record(TimerPoint& p) = 0;
  virtual double timer_seconds(const TimerPoint& from, const TimerPoint& to) = 0;
  virtual void timer_release(TimerPoint& p) noexcept = 0;

  // Collectives across devices: one communicator per device of `devices`
  // (distinct indices of this backend's kind; rank i is devices[i]) for
  // all_reduce_nccl, made on the first call for that list. Frontend thread.
  // Empty where there are none (the CPU backend; CUDA without NCCL).
  virtual std::vector<void*> collective_comms(const std::vector<int>& /*devices*/) { return {}; }
  // A copy from another device's memory into this one's, launched on this
  // device's stream after the caller made it wait for the producer (CUDA:
  // cudaMemcpyPeerAsync). `src_backend` owns `src`. False where this backend
  // cannot (the caller stages through the host).
  virtual bool copy_from_device(void* /*dst*/, const void* /*src*/, size_t /*bytes*/, Backend& /*src_backend*/) {
    return false;
  }
};

}  // namespace amlp
