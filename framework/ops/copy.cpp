// copy.cpp — data in and out of devices: from_host, copy_to (across
// devices), slice_rows (rows of a tensor onto any device), copy_ (same
// device), pack and unpack_ (many tensors as one, same device), and
// check_finite. Kernels: the backends' stream copies
// (core/backend/stream.h: cpu/cpu_backend.cpp, cuda/cuda_backend.cpp), the peer copy
// of their collectives between GPUs (cuda/collectives.cpp), and the
// finiteness check (cpu/elementwise.cpp, cuda/check_finite.cu).
#include <algorithm>
#include <memory>
#include <vector>

#include "framework/ops/op.h"

namespace amlp {

using namespace ops;

Tensor from_host(const Shape& s, const float* values, Device d) {
  detail::check_shape("from_host", s);
  DeviceContext& c = context(d);
  Tensor y = alloc(s, c);
  // The kernel runs later: the op owns its copy of the values (a payload).
  enqueue(c, {"from_host", kWaitsForHost}, {}, {&y}, {y.nbytes()},
          detail::payload(std::vector<float>(values, values + y.numel())), [](Backend& be, const OpArgs& k) {
    be.copy_from_host(k.out(0), k.payload<std::vector<float>>().data(), k.scalar(0));
  });
  return y;
}

namespace {
// `to` with its -1 (if any) inferred for n elements: false when no shape of
// n elements fits (numel() throws ShapeError where a product passes int64).
bool infer_shape(Shape& to, int64_t n) {
  const auto minus = std::find(to.begin(), to.end(), int64_t{-1});
  if (minus != to.end()) {
    *minus = 1;
    const int64_t rest = numel(to);
    if (rest == 0 || n % rest != 0) return false;
    *minus = n / rest;
  }
  return numel(to) == n;
}
}  // namespace

Tensor reshape(const Tensor& a, const Shape& s) {
  need_defined("reshape", {&a});
  if (std::count(s.begin(), s.end(), int64_t{-1}) > 1 ||
      std::any_of(s.begin(), s.end(), [](int64_t d) { return d < -1; }))
    throw ShapeError("reshape: shape " + shape_str(s) + " has a negative dimension (one -1 at most)");
  Shape to = s;
  bool fits = false;
  try {
    fits = infer_shape(to, a.numel());
  } catch (const ShapeError&) {  // a product past int64: no tensor has that many elements
  }
  if (!fits) throw ShapeError(detail::concat("reshape: cannot view shape ", shape_str(a.shape()), " as ", shape_str(s)));
  Tensor y = detail::alias(a);
  y.impl_ptr()->shape = to;
  if (detail::any_requires_grad({&a})) {
    const Shape from = a.shape();
    detail::record(y, "reshape", {a}, [from](const Tensor& g) { return std::vector<Tensor>{reshape(g, from)}; });
  }
  return y;
}

namespace {

// A new tensor of shape `s` on dst_ctx's device, holding y.nbytes() bytes of
// a from element `offset` on: one op, on the CUDA side when one side is a
// GPU, else on the destination. Between two GPUs it runs on the consumer:
// its stream waits on the producer's event (a cross-queue dependency), then
// the backend's collectives copy (copy_from_device: cudaMemcpyPeerAsync); a
// backend that cannot is staged through the host by the callers.
Tensor queue_copy(const char* name, const Tensor& a, size_t offset, const Shape& s, DeviceContext& dst_ctx) {
  const Device d = dst_ctx.device;
  Tensor y = alloc(s, dst_ctx);
  const size_t bytes = y.nbytes();
  const bool peer = a.device().is_cuda() && d.is_cuda() && a.device() != d;
  DeviceContext& run = a.device().is_cuda() && !peer ? ctx_of(a) : dst_ctx;
  const bool to_host = a.device().is_cuda() && !d.is_cuda();
  const bool from_host = !a.device().is_cuda() && d.is_cuda();
  Backend* src_backend = ctx_of(a).backend.get();
  // Between a GPU and the host the copy stages through host memory. Scalars:
  // bytes, offset, the kind (peer | to_host << 1 | from_host << 2), the
  // source's backend, and both GPUs' indices (for a peer copy's error).
  enqueue(run, {name, to_host || from_host ? kWaitsForHost : OpTraits{}}, {&a}, {&y},
          {bytes, offset, uint64_t{peer} | uint64_t{to_host} << 1 | uint64_t{from_host} << 2, pointer_bits(src_backend),
           static_cast<uint64_t>(d.index), static_cast<uint64_t>(a.device().index)},
          [](Backend& be, const OpArgs& k) {
    const size_t bytes = k.scalar(0);
    const float* src = k.in(0) + k.scalar(1);
    const uint64_t kind = k.scalar(2);
    if (kind & 1) {
      Collectives* col = be.collectives();  // none: no peer copies
      if (!col || !col->copy_from_device(k.out(0), src, bytes, *k.scalar_ptr<Backend>(3)))
        throw Error(detail::concat(Device{DeviceKind::CUDA, k.scalar_int(4)}.str(), " cannot copy from ",
                                   Device{DeviceKind::CUDA, k.scalar_int(5)}.str()));
    } else if (kind & 2) {
      be.copy_to_host(k.out(0), src, bytes);
    } else if (kind & 4) {
      be.copy_from_host(k.out(0), src, bytes);
    } else {
      be.copy(k.out(0), src, bytes);
    }
  });
  return y;
}

}  // namespace

Tensor copy_to(const Tensor& a, Device d) {
  need_defined("copy_to", {&a});
  DeviceContext& dst_ctx = context(d);
  return queue_copy("copy", a, 0, a.shape(), dst_ctx);  // between GPUs: peer to peer
}

Tensor slice_rows(const Tensor& x, int64_t begin, int64_t end, Device d) {
  need_defined("slice_rows", {&x});
  if (x.ndim() < 1)
    throw ShapeError(detail::concat("slice_rows: x must be at least 1-D, got shape ", shape_str(x.shape())));
  const int64_t rows = x.dim(0);
  if (begin < 0 || begin > end || end > rows)
    throw ShapeError(detail::concat("slice_rows: rows [", begin, ", ", end, ") of shape ", shape_str(x.shape()),
                                    ": need 0 <= begin <= end <= ", rows));
  DeviceContext& dst_ctx = context(d);
  Shape s = x.shape();
  s[0] = end - begin;
  const size_t row = rows ? count(x) / static_cast<size_t>(rows) : 0;  // elements per row
  return queue_copy("slice_rows", x, static_cast<size_t>(begin) * row, s, dst_ctx);
}

void copy_(Tensor& dst, const Tensor& src) {
  need_defined("copy_", {&dst, &src});
  if (dst.shape() != src.shape())
    throw ShapeError(detail::concat("copy_: shapes ", shape_str(dst.shape()), " and ", shape_str(src.shape()), " differ"));
  same_device("copy_", {&dst, &src});
  const size_t bytes = src.nbytes();
  enqueue(ctx_of(dst), "copy", {&src}, {&dst}, {bytes}, [](Backend& be, const OpArgs& k) {
    be.copy(k.out(0), k.in(0), k.scalar(0));
  });
}

namespace {
// pack's and unpack_'s checks: every tensor defined and on one device. The
// op's scalars: each one's bytes, in order; and their values in all.
struct Packed {
  std::vector<uint64_t> bytes;
  int64_t total = 0;
};
Packed packed_layout(const char* op, const std::vector<Tensor>& xs, const Tensor* packed) {
  if (xs.empty()) throw Error(detail::concat(op, ": no tensors"));
  Packed p;
  p.bytes.reserve(xs.size());
  const Tensor& first = packed ? *packed : xs.front();
  for (const Tensor& x : xs) {
    need_defined(op, {&x});
    same_device(op, {&first, &x});
    p.bytes.push_back(x.nbytes());
    p.total += x.numel();
  }
  return p;
}
}  // namespace

Tensor pack(const std::vector<Tensor>& xs) {
  Packed p = packed_layout("pack", xs, nullptr);
  DeviceContext& c = ctx_of(xs.front());
  Tensor y = alloc({p.total}, c);
  std::vector<const Tensor*> reads;
  reads.reserve(xs.size());
  for (const Tensor& x : xs) reads.push_back(&x);
  enqueue(c, "pack", reads, {&y}, p.bytes, [](Backend& be, const OpArgs& k) {
    float* out = k.out(0);
    for (size_t i = 0; i < k.reads(); ++i) {
      const size_t n = k.scalar(i);
      if (n) be.copy(out, k.in(i), n);
      out += n / sizeof(float);
    }
  });
  return y;
}

void unpack_(const std::vector<Tensor>& xs, const Tensor& packed) {
  need_defined("unpack_", {&packed});
  Packed p = packed_layout("unpack_", xs, &packed);
  if (packed.ndim() != 1 || packed.numel() != p.total)
    throw ShapeError(detail::concat("unpack_: the tensors hold ", p.total, " values, the packed tensor is ",
                                    shape_str(packed.shape())));
  std::vector<const Tensor*> writes;
  writes.reserve(xs.size());
  for (const Tensor& x : xs) writes.push_back(&x);
  enqueue(ctx_of(packed), "unpack", {&packed}, writes, p.bytes, [](Backend& be, const OpArgs& k) {
    const float* in = k.in(0);
    for (size_t i = 0; i < k.writes(); ++i) {
      const size_t n = k.scalar(i);
      if (n) be.copy(k.out(i), in, n);
      in += n / sizeof(float);
    }
  });
}

void check_finite(const Tensor& a, const std::string& what) {
  need_defined("check_finite", {&a});
  const size_t n = count(a);
  // The kernel runs later: the op owns its copy of the name (a payload).
  enqueue(ctx_of(a), {"check_finite", kWaitsForHost}, {&a}, {}, {n}, detail::payload(what),
          [](Backend& be, const OpArgs& k) { be.kernels.require_finite(be, k.in(0), k.scalar(0), k.payload<std::string>().c_str()); });
}

}  // namespace amlp
