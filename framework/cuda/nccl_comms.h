// nccl_comms.h — the NCCL communicators all_reduce_sum reduces with across
// GPUs (the backend's collective_comms), and what ends a collective whose
// ranks cannot all finish. Builds with NCCL only (ASYNCMLP_WITH_NCCL). No
// NCCL header here: a communicator travels as void* (an ncclComm_t).
//
// A rank that fails (its launch, or asynchronously inside NCCL) would leave
// the others spinning on their GPUs forever: the failure aborts every
// communicator of its clique (ncclCommAbort), so their kernels exit, and the
// other ranks' waits, which poll nccl_failure(), end in the usual one-line
// error instead of a hang.
#pragma once
#include <string>
#include <vector>

namespace amlp::cuda {

// One communicator per GPU of `devices` (distinct CUDA indices; rank i is
// devices[i]), made in this process with ncclCommInitAll on the first call
// for this list and kept until exit (or until the clique is aborted: the
// next call makes new ones). Frontend thread. Throws DeviceError for a GPU
// that is not there, Error naming ncclGetErrorString when NCCL fails.
std::vector<void*> nccl_communicators(const std::vector<int>& devices);

// Aborts every communicator of the clique `comm` belongs to and keeps `why`
// as the reason every rank reports. Any thread; a clique is aborted once.
void nccl_abort_clique(void* comm, const std::string& why);

// "" while no communicator of `comms` failed; else why, and *failed names
// the communicator (an asynchronous NCCL error found with
// ncclCommGetAsyncError aborts its clique first). An aborted communicator is
// freed: the caller reports it once and forgets it. Any thread.
std::string nccl_failure(const std::vector<void*>& comms, void** failed = nullptr);

}  // namespace amlp::cuda
