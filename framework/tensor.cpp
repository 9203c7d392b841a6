#include "framework/tensor.h"

#include <iomanip>
#include <ostream>
#include <sstream>

#include "framework/autograd.h"
#include "framework/enqueue.h"
#include "framework/error.h"
#include "framework/runtime.h"

namespace amlp {

std::string shape_str(const Shape& s) {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  if (s.size() == 1) os << ",";
  os << ")";
  return os.str();
}

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

static const TensorImpl& checked(const std::shared_ptr<TensorImpl>& p) {
  if (!p) throw Error("use of an undefined tensor");
  return *p;
}

const Shape& Tensor::shape() const { return checked(impl_).shape; }
int64_t Tensor::dim(int i) const {
  const Shape& s = shape();
  int n = static_cast<int>(s.size());
  if (i < 0) i += n;
  if (i < 0 || i >= n) throw ShapeError(detail::concat("dimension ", i, " out of range for shape ", shape_str(s)));
  return s[i];
}
int64_t Tensor::numel() const { return amlp::numel(shape()); }
Device Tensor::device() const { return checked(impl_).ctx->device; }
DeviceContext& Tensor::ctx() const { return *checked(impl_).ctx; }
float* Tensor::data() const { return static_cast<float*>(checked(impl_).storage->data()); }
const std::shared_ptr<Storage>& Tensor::storage() const { return checked(impl_).storage; }

void Tensor::wait_to_read() const {
  const Storage& s = *storage();
  if (s.writer_queue) static_cast<Queue*>(s.writer_queue)->wait_for(s.writer_seq);
  else ctx().queue.rethrow_if_error();
}

std::vector<float> Tensor::to_host() const {
  std::vector<float> out(static_cast<size_t>(numel()));
  DeviceContext& c = ctx();
  Backend* be = c.backend.get();
  const float* src = data();
  float* dst = out.data();
  size_t bytes = nbytes();
  // Queued like any op (so it follows the writer), then waited for.
  uint64_t seq = detail::enqueue(c, "to_host", {this}, {}, [=] { be->copy_to_host(dst, src, bytes); });
  c.queue.wait_for(seq);
  return out;
}

float Tensor::item() const {
  if (numel() != 1) throw ShapeError("item() needs a one-element tensor, got shape " + shape_str(shape()));
  return to_host()[0];
}

Tensor& Tensor::requires_grad_(bool on) {
  checked(impl_);
  impl_->requires_grad = on;
  return *this;
}
bool Tensor::requires_grad() const { return checked(impl_).requires_grad; }
Tensor Tensor::grad() const { return Tensor(checked(impl_).grad); }

std::ostream& operator<<(std::ostream& os, const Tensor& t) {
  if (!t.defined()) return os << "Tensor(undefined)";
  std::vector<float> v = t.to_host();
  os << "Tensor" << shape_str(t.shape()) << " on " << t.device().str() << " [";
  const size_t show = 8;
  for (size_t i = 0; i < v.size() && i < show; ++i) os << (i ? ", " : "") << v[i];
  if (v.size() > show) os << ", ... (" << v.size() << " values)";
  return os << "]";
}

}  // namespace amlp
