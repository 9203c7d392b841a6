// tensor.h — float32 row-major tensors that live on a device.
//
// A Tensor is a cheap handle (shared). Creating one through an op allocates
// its buffer at once and queues the kernel that fills it. Only these block:
// wait_to_read(), to_host(), item(), operator<< and waitall() (docs/design.md §4).
//
//   Tensor x = randn({1024, 512}, Device::cpu());   // queued, returns at once
//   Tensor y = relu(x);                              // queued behind it
//   float s = sum(y).item();                         // waits for all three
#pragma once
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "framework/device.h"

namespace amlp {

using Shape = std::vector<int64_t>;
std::string shape_str(const Shape& s);  // "(1024, 512)"
// Element count. Throws ShapeError for a negative dimension, or when the
// count, or its byte count as float32, does not fit in 64 bits (a shape
// with a 0 dimension has 0 elements, whatever the others).
int64_t numel(const Shape& s);

struct TensorImpl;  // the engine's side (framework/core/tensor/tensor_impl.h)
class HostCopy;

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const;
  int64_t dim(int i) const;  // negative i counts from the end
  int ndim() const { return static_cast<int>(shape().size()); }
  int64_t numel() const;
  size_t nbytes() const { return static_cast<size_t>(numel()) * sizeof(float); }
  Device device() const;

  // Blockers. Each rethrows the error of a failed op upstream of this tensor.
  void wait_to_read() const;            // waits for the op that last wrote this tensor
  std::vector<float> to_host() const;   // waits, then copies out
  float item() const;                   // one-element tensors only
  // Queues the copy and returns at once; the HostCopy's get() waits for it.
  HostCopy to_host_async() const;

  // Autograd.
  Tensor& requires_grad_(bool on = true);
  bool requires_grad() const;
  Tensor grad() const;                  // undefined until a backward() wrote it
  void reset_grad() const;              // drops the gradient (set-to-none)
  void backward() const;                // head gradient of ones (MXNet semantics); nn/autograd.cpp

  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }

 private:
  std::shared_ptr<TensorImpl> impl_;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);  // blocks

// A device-to-host copy in flight (Tensor::to_host_async): the values land in
// host memory the device can write without the frontend waiting (pinned
// memory on CUDA). get() waits for the copy to complete on the device, not
// merely to be launched, then hands the values over.
//
//   HostCopy h = loss.to_host_async();   // queued behind loss's writer
//   ... queue the next batch ...
//   float l = h.get()[0];                // waits for that copy only
class HostCopy {
 public:
  HostCopy();                          // empty: ready() is false, get() throws
  HostCopy(HostCopy&&) noexcept;
  HostCopy& operator=(HostCopy&&) noexcept;
  ~HostCopy();  // waits for a copy still in flight (its memory is written by the device)
  bool ready() const;                   // completed, without waiting
  const std::vector<float>& get();      // waits; rethrows an upstream failure

 private:
  friend class Tensor;
  struct State;
  std::unique_ptr<State> state_;
};

// Whether ops on this thread record (on unless a NoGradGuard is alive).
bool grad_enabled();
// Turns recording on this thread on or off until changed again (MXNet's
// autograd.record() scope, torch.set_grad_enabled); NoGradGuard restores.
void set_grad_enabled(bool on);

// Disables recording on this thread for its lifetime (evaluation, updates).
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool prev_;
};

}  // namespace amlp
