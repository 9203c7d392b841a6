// op.cpp — an op's kernel arguments, checked (op.h).
#include "framework/core/op/op.h"

#include "framework/core/memory/memory.h"
#include "framework/error.h"

namespace amlp {

const float* OpArgs::in(size_t i) const {
  if (i >= reads_)
    throw Error(detail::concat("op '", op_, "' asked for read #", i, " but declared ", reads_));
  return bufs_[i] ? static_cast<const float*>(bufs_[i]->data()) : nullptr;
}

float* OpArgs::out(size_t i) const {
  if (i >= writes_)
    throw Error(detail::concat("op '", op_, "' asked for write #", i, " but declared ", writes_));
  const auto& b = bufs_[reads_ + i];
  return b ? static_cast<float*>(b->data()) : nullptr;
}

void OpArgs::bad_scalar(size_t i) const {
  throw Error(detail::concat("op '", op_, "' asked for scalar #", i, " but declared ", scalars()));
}

void OpArgs::bad_payload() const {
  throw Error(detail::concat("op '", op_, "' asked for a payload of another type than it declared, or none"));
}

}  // namespace amlp
