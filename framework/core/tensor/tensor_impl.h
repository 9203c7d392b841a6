// tensor_impl.h — what a Tensor handle points to (engine side).
//
//   TensorImpl: shape, the device's context, the buffer (Storage), autograd state.
#pragma once
#include <memory>

#include "framework/core/memory/memory.h"
#include "framework/tensor.h"

namespace amlp {

struct DeviceContext;
struct Node;

struct TensorImpl {
  TensorImpl() = default;
  // The last handle on a buffer made under `stream` whose queued ops still
  // use it offers the buffer to later ops (Pool::offer).
  ~TensorImpl();
  TensorImpl(const TensorImpl&) = delete;
  TensorImpl& operator=(const TensorImpl&) = delete;

  Shape shape;
  DeviceContext* ctx = nullptr;
  std::shared_ptr<Storage> storage;
  // autograd
  bool requires_grad = false;
  std::shared_ptr<Node> grad_fn;      // op that made this tensor (non-leaf)
  std::shared_ptr<TensorImpl> grad;   // leaves: written by each backward()
};

namespace detail {
DeviceContext& ctx_of(const Tensor& t);                      // throws for an undefined tensor
const std::shared_ptr<Storage>& storage_of(const Tensor& t);
// A tensor of shape `s` on `c` for an op to write: its buffer is allocated
// now under the enqueue policy (docs/design.md §3), or when the worker starts the
// writing op under run (alloc_policy()); `now` allocates at once whatever
// the policy (empty(): no op will write it). Throws ShapeError, allocating
// nothing, for a negative dimension or an element or byte count that does
// not fit (numel()).
Tensor alloc(const Shape& s, DeviceContext& c, bool now = false);
// Another handle on t's buffer with no autograd state: what a backward
// closure keeps of its own op's output (keeping `t` itself would be a cycle).
Tensor alias(const Tensor& t);
// The same check alone, its message prefixed with the op's name ("randn: shape ...").
void check_shape(const char* op, const Shape& s);
}  // namespace detail

}  // namespace amlp
