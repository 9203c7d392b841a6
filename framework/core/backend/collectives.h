// collectives.h — the collectives concept: work that joins this device with
// others (NCCL communicators and all-reduces, peer-to-peer copies). A backend
// without it has none: Backend::collectives() is nullptr (the CPU, whose
// devices reduce with a kernel that reads every device's tensor, and copy
// through host memory).
//
//   if (Collectives* col = be.collectives()) comms = col->collective_comms({0, 1});
#pragma once
#include <cstddef>
#include <vector>

namespace amlp {

struct Backend;

struct Collectives {
  virtual ~Collectives() = default;
  // One communicator per device of `devices` (distinct indices of this
  // backend's kind; rank i is devices[i]) for all_reduce_nccl, made on the
  // first call for that list. Frontend thread. Empty where there are none
  // (CUDA without NCCL).
  virtual std::vector<void*> collective_comms(const std::vector<int>& devices) = 0;
  // Worker thread: y = the sum of x over every rank of `comm` (an
  // ncclComm_t), this device's part of an NCCL all-reduce, on its stream.
  virtual void all_reduce_nccl(const float* x, float* y, size_t n, void* comm) = 0;
  // Worker thread: a copy from another device's memory into this one's,
  // launched on this device's stream after the caller made it wait for the
  // producer (CUDA: cudaMemcpyPeerAsync). `src_backend` owns `src`. False
  // where this backend cannot copy from that one (the caller stages through
  // the host).
  virtual bool copy_from_device(void* dst, const void* src, size_t bytes, Backend& src_backend) = 0;
};

}  // namespace amlp
