// ops.h — frontend ops. Each checks its arguments on the calling thread
// (a ShapeError names both shapes), allocates its outputs, queues one kernel
// on its device and returns (docs/design.md §1). Ops with a backward record
// themselves for autograd when an input requires a gradient.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "framework/tensor.h"

namespace amlp {

// --- creation -------------------------------------------------------------
Tensor empty(const Shape& s, Device d);                 // uninitialised
Tensor full(const Shape& s, float value, Device d);
inline Tensor zeros(const Shape& s, Device d) { return full(s, 0.f, d); }
inline Tensor ones(const Shape& s, Device d) { return full(s, 1.f, d); }
Tensor from_host(const Shape& s, const float* values, Device d);  // copies values at once
// ShapeError unless mean and stddev are finite and stddev >= 0 (randn), or lo and
// hi finite with lo <= hi (rand_uniform).
Tensor randn(const Shape& s, Device d, float mean = 0.f, float stddev = 1.f);
Tensor rand_uniform(const Shape& s, Device d, float lo = 0.f, float hi = 1.f);

// Global random stream: Philox4x32-10 at (seed, offset). Each random op draws
// at the current offset and advances it, so a seed fixes every number on
// every backend.
void manual_seed(uint64_t seed);
// A position in the stream: manual_seed(random_seed(), random_offset()) after
// some draws makes the next draws repeat them.
void manual_seed(uint64_t seed, uint64_t offset);
uint64_t random_seed();
uint64_t random_offset();

// --- math (differentiable) --------------------------------------------------
// op(a)·op(b): a (M,K) [or (K,M) with transpose_a], b (K,N) [or (N,K)].
Tensor matmul(const Tensor& a, const Tensor& b, bool transpose_a = false, bool transpose_b = false);
// x (B,C) + b (C)
Tensor bias_add(const Tensor& x, const Tensor& b);
// Dense layer in one kernel: y = x·Wᵀ + b;  x (B,in), W (out,in), b (out) or undefined.
Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b);
// relu(linear(x, w, b)) with the bias and the ReLU in one pass after the GEMM,
// and the ReLU's backward fused with the bias gradient (a Dense with ReLU):
// into the input-gradient GEMM of the linear or linear_relu that consumes
// its output (linear_grad_input_relu), or one pass of its own.
Tensor linear_relu(const Tensor& x, const Tensor& w, const Tensor& b);
// A Dense layer's weight gradient dW = dzᵀ·x (out, in) and, with `bias`, its
// bias gradient db = Σ_r dz (out) in one op (one cuBLASLt launch on CUDA);
// dz (B, out), x (B, in). Not differentiable (linear's backward uses it).
std::pair<Tensor, Tensor> linear_grad_weight(const Tensor& dz, const Tensor& x, bool bias);
// The input gradient of a Dense layer (g (B,out), W (out,in)) whose input
// was y = linear_relu(...) (B,in), through that ReLU: dz = (g·W)·(y > 0), and
// with `bias` db = Σ_r dz (in), in one op (one cuBLASLt launch on CUDA,
// reading `mask`: the bits linear_relu's forward kept, or undefined). Not
// differentiable (linear's and linear_relu's backward use it).
std::pair<Tensor, Tensor> linear_grad_input_relu(const Tensor& g, const Tensor& w, const Tensor& y,
                                                 const Tensor& mask, bool bias);
// Column sums: x (R,C) → (C)   (the bias gradient)
Tensor sum_rows(const Tensor& x);
Tensor relu(const Tensor& x);
// Per-sample 0.5·mean_c (pred − label)²: pred (B,C), label (B,C) or (B) when C == 1 → (B)
Tensor l2_loss(const Tensor& pred, const Tensor& label);
Tensor add(const Tensor& a, const Tensor& b);           // same shapes
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);           // elementwise, same shapes
Tensor scale(const Tensor& a, float s);
Tensor add_scalar(const Tensor& a, float s);
Tensor sum(const Tensor& a);                            // → shape ()
Tensor mean(const Tensor& a);                           // → shape ()
// The same buffer seen with shape `s` (one -1 is inferred): no op is queued,
// the result shares a's buffer and its writes. ShapeError unless the element
// counts agree. The gradient is reshaped back.
Tensor reshape(const Tensor& a, const Shape& s);

// --- not differentiable ------------------------------------------------------
Tensor copy_to(const Tensor& a, Device d);              // waits for the source's writer
void copy_(Tensor& dst, const Tensor& src);             // same shape, same device
// The values of xs one after another, each flattened, in one new tensor of
// shape (total,) on their device, by one queued op however many there are (a
// checkpoint's 200,000 parameters read back in a few ops, not 200,000).
// Error when xs is empty or holds an undefined tensor; DeviceError across devices.
Tensor pack(const std::vector<Tensor>& xs);
// Its inverse, in place: xs[i] takes the next numel(xs[i]) values of `packed`
// (shape (total,), on their device), by one queued op. ShapeError unless the
// counts add up to packed's.
void unpack_(const std::vector<Tensor>& xs, const Tensor& packed);
// Rows [begin, end) of x (R, ...) as a new tensor on device d, by one queued
// copy (on d; on the GPU's side when one side is a GPU; staged through the
// host between two GPUs, like copy_to). ShapeError unless 0 <= begin <= end <= R.
Tensor slice_rows(const Tensor& x, int64_t begin, int64_t end, Device d);
// The sum across devices (an all-reduce): xs[i] on distinct devices, all of
// one shape; returns ys with ys[i] on xs[i]'s device and every ys[i] equal to
// xs[0] + xs[1] + ... bitwise. Each ys[i] is written by one op on its own
// device's queue, so no device waits for the frontend:
//   CPU devices   a kernel that reads every xs[j] in index order; the
//                 cross-queue dependencies make it wait for each producer
//                 (no host-side barrier), and the producers' later writes
//                 wait for it;
//   CUDA devices  ncclAllReduce on each device's stream, launched by that
//                 device's worker, with one communicator per device for this
//                 device list (ncclCommInitAll on its first use).
// A single tensor gives a copy. Throws DeviceError for a repeated device, a
// mix of CPU and CUDA devices, or several CUDA devices in a build without
// NCCL (all_reduce_supported()); ShapeError for differing shapes; Error for
// an empty list or an undefined tensor. Nothing is queued then.
std::vector<Tensor> all_reduce_sum(const std::vector<Tensor>& xs);
// Whether all_reduce_sum can reduce over `devices` in this build, and if not,
// why (one line, for the caller's error message).
bool all_reduce_supported(const std::vector<Device>& devices, std::string* why = nullptr);
// Queues a kernel that fails (with KernelError) if any value is not finite.
void check_finite(const Tensor& a, const std::string& what);
// In-place SGD update of w from g (mom may be undefined when momentum == 0).
void sgd_update_(Tensor& w, const Tensor& g, Tensor& mom, float lr, float momentum, float wd,
                 float rescale);
// The same update for every parameter of a list, as one op (one kernel launch
// on CUDA, instead of one per parameter); each (w, g, mom) checked as above,
// all on one device. moms may be empty when momentum == 0.
void sgd_update_multi_(const std::vector<Tensor*>& ws, const std::vector<const Tensor*>& gs,
                       const std::vector<Tensor*>& moms, float lr, float momentum, float wd, float rescale);

}  // namespace amlp
