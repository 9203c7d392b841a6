// distributed.h — data parallelism across processes (docs/design.md §9): the
// process group (one rank per process under mpirun), the queued reduction
// across ranks, and one replica per rank (nn/dist_data_parallel.h).
//
//   dist::ProcessGroup& g = dist::ProcessGroup::init();
//   Tensor total = all_reduce_sum(x, g);   // queued; the sum of x over every rank
#pragma once
#include "framework/process_group.h"
#include "framework/tensor.h"

namespace amlp {

// The sum of x over every rank of `g`, a new tensor on x's device, queued:
//   CPU   an op on the device's second queue (its data queue: a
//         communication queue of the rank's own) that waits for x's producer
//         to complete, starts MPI_Iallreduce and completes when MPI says it
//         did; ops that read the result (an SGD update) wait for it, the
//         device's own queue goes on meanwhile;
//   CUDA  ncclAllReduce on the device's stream with the group's communicator
//         (ProcessGroup::nccl_comm; builds with NCCL).
// Every rank must queue its reductions in the same order (they pair up in
// order). Not differentiable. Throws Error for an undefined tensor, DistError
// for a GPU in a build without NCCL; nothing is queued then.
Tensor all_reduce_sum(const Tensor& x, dist::ProcessGroup& g);

}  // namespace amlp
