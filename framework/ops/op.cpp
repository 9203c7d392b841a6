// op.cpp — argument checks shared by the frontend ops (op.h).
#include "framework/ops/op.h"

#include <limits>

namespace amlp::ops {

void need_defined(const char* op, std::initializer_list<const Tensor*> ts) {
  for (const Tensor* t : ts)
    if (!t->defined()) throw Error(detail::concat(op, ": undefined tensor argument"));
}

void same_device(const char* op, std::initializer_list<const Tensor*> ts) {
  const Tensor* first = nullptr;
  for (const Tensor* t : ts) {
    if (!t->defined()) continue;
    if (!first) first = t;
    else if (t->device() != first->device())
      throw DeviceError(detail::concat(op, ": tensors on ", first->device().str(), " and ", t->device().str(),
                                       " (copy one to the other's device first)"));
  }
}

void need_2d(const char* op, const Tensor& t, const char* what, const Tensor* other, const char* other_what) {
  if (t.ndim() != 2)
    throw ShapeError(detail::concat(op, ": ", what, " must be 2-D, got shape ", shape_str(t.shape()),
                                    other ? detail::concat(" (", other_what, " ", shape_str(other->shape()), ")")
                                          : std::string()));
}

size_t count(const Tensor& t) { return static_cast<size_t>(t.numel()); }

int dim_int(const char* op, const Tensor& t, int i, const Tensor* other, const char* other_what) {
  const int64_t d = t.dim(i);
  if (d < 0 || d > std::numeric_limits<int>::max())
    throw ShapeError(detail::concat(op, ": dimension ", d, " of shape ", shape_str(t.shape()), " exceeds ",
                                    std::numeric_limits<int>::max(), " (the kernels' index range)",
                                    other ? detail::concat("; ", other_what, " ", shape_str(other->shape()))
                                          : std::string()));
  return static_cast<int>(d);
}

}  // namespace amlp::ops
