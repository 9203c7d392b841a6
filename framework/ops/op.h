// op.h — what every frontend op does first (internal to framework/ops):
// check its arguments on the calling thread, naming the shapes, before
// anything is allocated or queued (docs/design.md §1).
#pragma once
#include <initializer_list>
#include <string>

#include "framework/core/backend/backend.h"
#include "framework/core/context.h"
#include "framework/core/tensor/enqueue.h"
#include "framework/core/tensor/tensor_impl.h"
#include "framework/error.h"
#include "framework/core/tensor/tape.h"
#include "framework/ops.h"

namespace amlp::ops {

using detail::alloc;
using detail::ctx_of;
using detail::enqueue;
using detail::scalar_bits;
using detail::pointer_bits;

// An op's integer sizes as the scalars it declares (detail::enqueue).
inline OpScalars dims(std::initializer_list<int64_t> ds) {
  OpScalars v;
  for (int64_t d : ds) v.push_back(static_cast<uint64_t>(d));
  return v;
}

void need_defined(const char* op, std::initializer_list<const Tensor*> ts);
// Every defined tensor on the same device as the first.
void same_device(const char* op, std::initializer_list<const Tensor*> ts);
// For a binary op, `other` is the second operand, named in the message too.
void need_2d(const char* op, const Tensor& t, const char* what, const Tensor* other = nullptr,
             const char* other_what = "");
// Element count as the kernels' size_t, and a dimension as their int.
size_t count(const Tensor& t);
// Throws ShapeError (naming `other` too, when given) past INT_MAX.
int dim_int(const char* op, const Tensor& t, int i, const Tensor* other = nullptr, const char* other_what = "");

}  // namespace amlp::ops
