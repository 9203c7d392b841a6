// nccl_check.h — AMLP_NCCL_CHECK, cuda_check.h's check for NCCL calls
// (builds with NCCL only: ASYNCMLP_WITH_NCCL).
//
//   AMLP_NCCL_CHECK(ncclAllReduce(x, y, n, ncclFloat, ncclSum, comm, s));  // throws amlp::Error
//
// A failure reads "file:line: call failed: <ncclGetErrorString> (code N) on
// cuda:K", like a CUDA call's; in a kernel it becomes the op's KernelError.
#pragma once
#include <nccl.h>

#include "framework/cuda/cuda_check.h"

namespace amlp::cuda {

inline void check_nccl(ncclResult_t r, const char* file, int line, const char* call) {
  if (r != ncclSuccess) throw_failure(file, line, call, ncclGetErrorString(r), static_cast<int>(r));
}

}  // namespace amlp::cuda

#define AMLP_NCCL_CHECK(call)                                        \
  do {                                                               \
    ::amlp::cuda::check_nccl((call), __FILE__, __LINE__, #call);     \
  } while (0)
