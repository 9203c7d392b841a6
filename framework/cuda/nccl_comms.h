// nccl_comms.h — the NCCL communicators all_reduce_sum reduces with across
// GPUs (ops/all_reduce.cpp). Builds with NCCL only (ASYNCMLP_WITH_NCCL). No
// NCCL header here: a communicator travels as void* (an ncclComm_t) to the
// backend's all_reduce_nccl.
#pragma once
#include <vector>

namespace amlp::cuda {

// One communicator per GPU of `devices` (distinct CUDA indices; rank i is
// devices[i]), made in this process with ncclCommInitAll on the first call
// for this list and kept until exit. Frontend thread. Throws DeviceError for
// a GPU that is not there, Error naming ncclGetErrorString when NCCL fails.
std::vector<void*> nccl_communicators(const std::vector<int>& devices);

}  // namespace amlp::cuda
