// op.h — what the queue runs: an op's buffers, scalars and payload as it
// declared them, and the arguments its kernel is given (docs/design.md §1).
//
// An op is described once, by enqueue (enqueue.h): its name and traits
// (op_traits.h), the buffers it reads and writes (OpBuffers), its scalar
// arguments and an optional payload. Its kernel is a function of those
// alone (OpArgs; enqueue.h's OpKernel is a plain function pointer), so
// whoever runs it (the queue's worker, queue.h; a step graph recorded or
// replayed, step_capture.h) runs it with what the op declared and nothing
// else. (Queue::push also takes a bare closure, for engine tests and demos:
// that one declares nothing and is never replayed from a record.)
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <memory>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include "framework/core/memory/buffer_state.h"
#include "framework/core/op/op_traits.h"

namespace amlp {

class Storage;

// A dependency on another queue's op.
using QueueDep = OpRef;

// What an op carries beyond its scalars (a host array to copy in, a
// message), owned by the op and read by its kernel as OpArgs::payload<T>().
// The step-graph recogniser cannot compare it, so an op with a payload is
// never recorded (step_graph.h): what a replay needs belongs in the scalars.
struct OpPayload {
  std::shared_ptr<const void> data;
  const std::type_info* type = nullptr;
  template <class T>
  static OpPayload of(T value) {
    return {std::make_shared<const T>(std::move(value)), &typeid(T)};
  }
};

// An op's scalar arguments (enqueue.h): a handful, kept inline so that
// queueing an op and running it allocates nothing for them; more go to the heap.
class OpScalars {
 public:
  static constexpr size_t kInline = 6;
  OpScalars() = default;
  OpScalars(std::initializer_list<uint64_t> v) { assign(v.begin(), v.size()); }  // NOLINT: {n, bits} at call sites
  OpScalars(const std::vector<uint64_t>& v) { assign(v.data(), v.size()); }      // NOLINT
  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  const uint64_t* data() const { return n_ <= kInline ? inline_ : heap_.data(); }
  const uint64_t* begin() const { return data(); }
  const uint64_t* end() const { return data() + n_; }
  uint64_t operator[](size_t i) const { return data()[i]; }
  void push_back(uint64_t v) {
    if (n_ < kInline) {
      inline_[n_++] = v;
      return;
    }
    if (n_ == kInline) heap_.assign(inline_, inline_ + kInline);  // the seventh: all move to the heap
    heap_.push_back(v);
    ++n_;
  }
  void clear() {
    n_ = 0;
    std::vector<uint64_t>().swap(heap_);
  }

 private:
  void assign(const uint64_t* v, size_t n) {
    n_ = n;
    if (n <= kInline) std::copy(v, v + n, inline_);
    else heap_.assign(v, v + n);
  }
  uint64_t inline_[kInline] = {};
  size_t n_ = 0;
  std::vector<uint64_t> heap_;  // when n_ > kInline
};

// What a kernel is given when its op runs: the buffers the op declared,
// reads first, and its scalars and payload (docs/design.md §1). An
// enqueued op's kernel is a function of these alone (enqueue.h), so a
// replayed step cannot run it with arguments its op did not declare.
class OpArgs {
 public:
  OpArgs(const std::shared_ptr<Storage>* bufs, size_t reads, size_t writes, const char* op,
         const OpScalars* scalars = nullptr, const OpPayload* payload = nullptr)
      : bufs_(bufs), reads_(reads), writes_(writes), op_(op), scalars_(scalars), payload_(payload) {}
  // i-th read / write as declared; nullptr for an optional tensor left undefined.
  const float* in(size_t i) const;
  float* out(size_t i) const;
  size_t reads() const { return reads_; }
  size_t writes() const { return writes_; }
  // i-th scalar as declared (enqueue.h), checked: an op's sizes, flags,
  // seeds, factors (scalar_bits) and addresses (pointer_bits).
  size_t scalars() const { return scalars_ ? scalars_->size() : 0; }
  uint64_t scalar(size_t i) const {
    if (i >= scalars()) bad_scalar(i);
    return (*scalars_)[i];
  }
  int scalar_int(size_t i) const { return static_cast<int>(static_cast<int64_t>(scalar(i))); }
  bool scalar_bool(size_t i) const { return scalar(i) != 0; }
  float scalar_float(size_t i) const {  // the inverse of scalar_bits
    const uint32_t u = static_cast<uint32_t>(scalar(i));
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
  }
  template <class T>
  T* scalar_ptr(size_t i) const {  // the inverse of pointer_bits
    return reinterpret_cast<T*>(static_cast<uintptr_t>(scalar(i)));
  }
  // The op's payload, of the type it declared (checked).
  template <class T>
  const T& payload() const {
    if (!payload_ || !payload_->data || !payload_->type || *payload_->type != typeid(T)) bad_payload();
    return *static_cast<const T*>(payload_->data.get());
  }

 private:
  [[noreturn]] void bad_scalar(size_t i) const;
  [[noreturn]] void bad_payload() const;
  const std::shared_ptr<Storage>* bufs_;
  size_t reads_, writes_;
  const char* op_;
  const OpScalars* scalars_;
  const OpPayload* payload_;
};

// The buffers an op refers to: a few kept in the op itself (most ops read
// and write four or fewer), more on the heap, so that queueing and running
// an op allocates nothing for them.
class OpRefs {
 public:
  using Ref = std::shared_ptr<Storage>;
  static constexpr size_t kInline = 4;
  OpRefs() = default;
  OpRefs(std::vector<Ref> v) {  // NOLINT: Queue::push's refs convert
    if (v.size() > kInline) heap_ = std::move(v), on_heap_ = true;
    else for (Ref& r : v) inline_[n_++] = std::move(r);
  }
  OpRefs(OpRefs&& o) noexcept { take(o); }
  OpRefs& operator=(OpRefs&& o) noexcept {
    if (this != &o) clear(), take(o);
    return *this;
  }
  OpRefs(const OpRefs&) = delete;
  OpRefs& operator=(const OpRefs&) = delete;
  ~OpRefs() { clear(); }

  void reserve(size_t n) {
    if (n > kInline && !on_heap_ && n_ == 0) heap_.reserve(n), on_heap_ = true;
  }
  void push_back(Ref r) {
    if (!on_heap_ && n_ < kInline) {
      inline_[n_++] = std::move(r);
      return;
    }
    if (!on_heap_) {  // the fifth: every ref moves to the heap
      heap_.reserve(2 * kInline);
      for (size_t i = 0; i < n_; ++i) heap_.push_back(std::move(inline_[i]));
      n_ = 0, on_heap_ = true;
    }
    heap_.push_back(std::move(r));
  }
  size_t size() const { return on_heap_ ? heap_.size() : n_; }
  bool empty() const { return size() == 0; }
  Ref* data() { return on_heap_ ? heap_.data() : inline_; }
  const Ref* data() const { return on_heap_ ? heap_.data() : inline_; }
  Ref* begin() { return data(); }
  Ref* end() { return data() + size(); }
  const Ref* begin() const { return data(); }
  const Ref* end() const { return data() + size(); }
  Ref& operator[](size_t i) { return data()[i]; }
  const Ref& operator[](size_t i) const { return data()[i]; }
  Ref& back() { return data()[size() - 1]; }
  // Drops every ref and gives the heap's memory back.
  void clear() {
    for (size_t i = 0; i < n_; ++i) inline_[i].reset();
    n_ = 0;
    std::vector<Ref>().swap(heap_);
    on_heap_ = false;
  }

 private:
  void take(OpRefs& o) {
    for (size_t i = 0; i < o.n_; ++i) inline_[i] = std::move(o.inline_[i]);
    n_ = o.n_, heap_ = std::move(o.heap_), on_heap_ = o.on_heap_;
    o.n_ = 0, o.on_heap_ = false;
  }
  Ref inline_[kInline];
  size_t n_ = 0;          // refs in inline_ (while not on the heap)
  std::vector<Ref> heap_;
  bool on_heap_ = false;  // every ref is in heap_
};

// An op's buffers: `reads` then `writes` (null entries allowed), kept alive
// until the op was launched.
struct OpBuffers {
  OpRefs refs;
  size_t reads = 0;
  // The kernel's scalar arguments, for step graphs (step_graph.h): a step
  // is replayed as recorded only when each of its ops declared them; an op
  // that did not (a bare Queue::push, whose closure may have changed) is
  // recorded again every step. Every enqueued op declares them (enqueue.h).
  bool scalars_declared = false;
  OpScalars scalars;
  OpPayload payload;  // an op with one is never recorded (step_graph.h)
  OpTraits traits;
};

struct Backend;

// What the worker runs for an op, given its arguments: an enqueued op's
// kernel (enqueue.h OpKernel, a plain function) bound to its device's
// backend, one call; or any closure pushed to the queue itself
// (Queue::push, engine tests and demos).
class BoundKernel {
 public:
  using Fn = void (*)(Backend&, const OpArgs&);
  BoundKernel() = default;
  BoundKernel(std::nullptr_t) {}  // NOLINT: `kernel = nullptr` drops it
  BoundKernel(Fn fn, Backend* backend) : fn_(fn), backend_(backend) {}
  template <class F, class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, BoundKernel> &&
                                              std::is_invocable_v<F&, const OpArgs&>>>
  BoundKernel(F&& f) : closure_(std::forward<F>(f)) {}  // NOLINT: a closure converts
  void operator()(const OpArgs& a) const {
    if (fn_) fn_(*backend_, a);
    else closure_(a);
  }
  explicit operator bool() const { return fn_ != nullptr || static_cast<bool>(closure_); }

 private:
  Fn fn_ = nullptr;
  Backend* backend_ = nullptr;
  std::function<void(const OpArgs&)> closure_;
};

}  // namespace amlp
