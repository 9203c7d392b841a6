// tensor.h — float32 row-major tensors that live on a device.
//
// A Tensor is a cheap handle (shared). Creating one through an op allocates
// its buffer at once and queues the kernel that fills it. Only these block:
// wait_to_read(), to_host(), item(), operator<< and waitall() (DESIGN §4).
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
#include "framework/memory.h"

namespace amlp {

using Shape = std::vector<int64_t>;
std::string shape_str(const Shape& s);  // "(1024, 512)"
int64_t numel(const Shape& s);

struct DeviceContext;
struct Node;

struct TensorImpl {
  Shape shape;
  DeviceContext* ctx = nullptr;
  std::shared_ptr<Storage> storage;
  // autograd
  bool requires_grad = false;
  std::shared_ptr<Node> grad_fn;      // op that made this tensor (non-leaf)
  std::shared_ptr<TensorImpl> grad;   // leaves: written by each backward()
};

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
  DeviceContext& ctx() const;

  // Raw buffer for kernels (valid on the worker; meaningless to read on the
  // frontend before wait_to_read()).
  float* data() const;
  const std::shared_ptr<Storage>& storage() const;

  // Blockers.
  void wait_to_read() const;            // waits for the op that last wrote this tensor
  std::vector<float> to_host() const;   // waits, then copies out
  float item() const;                   // one-element tensors only

  // Autograd.
  Tensor& requires_grad_(bool on = true);
  bool requires_grad() const;
  Tensor grad() const;                  // undefined until a backward() wrote it
  void backward() const;                // head gradient of ones (MXNet semantics)

  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }

 private:
  std::shared_ptr<TensorImpl> impl_;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);  // blocks

}  // namespace amlp
