// backend.h — a device as the engine sees it (ggml's split of buffer type,
// buffer, backend and device, in our words): one object per device that
// gathers its concepts, each an interface of its own.
//
//   memory       RawAllocator (memory.h: device blocks for the Pool) and
//                HostAllocator (host_allocator.h: host memory to copy into)
//   stream       Stream (stream.h): StreamSync (stream_sync.h: what the
//                queue asks) plus copies and timers
//   kernels      KernelTable (kernels.h): the math, one function pointer per
//                kernel, filled by the backend's constructor
//   collectives  Collectives (collectives.h), or nullptr where there are none
//
// No CUDA header appears here: CPU-only code never sees one. The concrete
// backends are cpu/cpu_backend.h and cuda/cuda_backend.h; registry/ names
// them.
//
//   be.kernels.NAME(be, args...);                 // a kernel: a pointer call
//   be.copy(dst, src, bytes);                     // the stream
//   if (Collectives* col = be.collectives()) ...  // a concept it may lack
#pragma once
#include "framework/core/backend/collectives.h"
#include "framework/core/memory/host_allocator.h"
#include "framework/core/backend/kernels.h"
#include "framework/core/memory/memory.h"
#include "framework/core/backend/stream.h"

namespace amlp {

struct Backend : RawAllocator, HostAllocator, Stream {
  ~Backend() override = default;
  // Filled once by the backend's constructor (each body file's filler, then
  // complete_kernels); read-only afterwards, by any worker.
  KernelTable kernels;
  // NCCL and peer copies; nullptr: this backend has none.
  virtual Collectives* collectives() { return nullptr; }
};

}  // namespace amlp
