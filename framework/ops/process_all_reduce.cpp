// process_all_reduce.cpp — all_reduce_sum across the ranks of a process group
// (framework/distributed.h): one queued op per call on this rank.
#include "framework/distributed.h"
#include "framework/ops/op.h"
#include "framework/runtime.h"

namespace amlp {

using namespace ops;

Tensor all_reduce_sum(const Tensor& x, dist::ProcessGroup& g) {
  need_defined("all_reduce_sum", {&x});
  DeviceContext& c = ctx_of(x);
  const size_t n = count(x);
  if (x.device().is_cuda()) {
    if (!c.backend->collectives()) throw DeviceError("all_reduce_sum: " + x.device().str() + " has no collectives");
    void* comm = g.nccl_comm(x.device().index);  // may throw: before anything is allocated or queued
    Tensor y = alloc(x.shape(), c);
    enqueue(c, {"nccl_all_reduce", kCollective}, {&x}, {&y}, {n, pointer_bits(comm)}, [](Backend& be, const OpArgs& a) {
      be.collectives()->all_reduce_nccl(a.in(0), a.out(0), a.scalar(0), a.scalar_ptr<void>(1));  // checked above
    });
    return y;
  }
  Tensor y = alloc(x.shape(), c);
  DataQueueGuard on_comm_queue(x.device());  // the rank's communication queue
  enqueue(c, {"mpi_all_reduce", kCollectiveViaHost}, {&x}, {&y}, {n, pointer_bits(&g)}, [](Backend&, const OpArgs& a) {
    a.scalar_ptr<dist::ProcessGroup>(1)->all_reduce_sum(a.in(0), a.out(0), a.scalar(0));
  });
  return y;
}

}  // namespace amlp
