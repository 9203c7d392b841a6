// nccl_bootstrap.cpp — an NCCL communicator across processes (mpi_impl.h):
// rank 0's ncclGetUniqueId broadcast over MPI, then ncclCommInitRank on this
// rank's GPU. Builds with MPI and NCCL. Like the in-process communicators
// (cuda/nccl_comms.cpp) it is kept until exit and never destroyed.
#include <cstring>
#include <vector>

#include "framework/core/settings.h"
#include "framework/cuda/device_guard.h"
#include "framework/cuda/nccl_check.h"
#include "framework/dist/mpi_impl.h"
#include "framework/device.h"
#include "framework/error.h"

namespace amlp::dist {

void* make_nccl_comm(ProcessGroup& g, int gpu) {
  if (gpu < 0 || gpu >= cuda_device_count()) throw DeviceError(detail::device_absent("cuda:" + std::to_string(gpu)));
  ncclUniqueId id;
  if (g.rank() == 0) AMLP_NCCL_CHECK(ncclGetUniqueId(&id));
  std::vector<char> bytes(sizeof id);
  std::memcpy(bytes.data(), &id, sizeof id);
  g.broadcast(bytes, 0);
  std::memcpy(&id, bytes.data(), sizeof id);
  cuda::DeviceGuard on(gpu);
  ncclComm_t comm;
  AMLP_NCCL_CHECK(ncclCommInitRank(&comm, g.size(), id, g.rank()));
  return comm;
}

}  // namespace amlp::dist
