// host_allocator.h — the memory concept's host side (ggml's host buffer
// type): host memory a device can copy into without the frontend waiting.
// Its device side is RawAllocator (memory.h), which the Pool draws on.
//
//   void* p = be.alloc_host(bytes);  ...  be.free_host(p);   // frontend thread
#pragma once
#include <cstddef>

namespace amlp {

struct HostAllocator {
  virtual ~HostAllocator() = default;
  // Pinned on CUDA (from a per-device cache); aligned host memory on the CPU.
  virtual void* alloc_host(size_t bytes) = 0;
  virtual void free_host(void* p) noexcept = 0;
};

}  // namespace amlp
