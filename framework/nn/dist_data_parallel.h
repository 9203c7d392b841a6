// dist_data_parallel.h — one model replica per rank (one rank per process,
// framework/process_group.h), each global batch split across the ranks,
// and the gradients summed across the ranks by queued ops: DataParallel
// (data_parallel.h) past one process.
//
// Every rank builds its replica and initialises it from the same random
// stream; rank 0's weights are then broadcast, so the replicas start
// bitwise equal whatever each rank drew, and the stream stands where one
// process leaves it. A global batch's rows are drawn from the one stream and
// each rank takes its own (split(): the first rows % size ranks one row
// more), so with the same seed `mpirun -np N` with a global batch B trains
// as one process with batch B. backward() reduces each parameter's gradient
// with all_reduce_sum(grad, group) as soon as it is queued, last layer first:
// the last layer's reduction runs on the communication queue while the
// device's queue runs the first layer's backward. SGD::step(global batch)
// then keeps the replicas bitwise equal.
//
//   dist::ProcessGroup& g = dist::ProcessGroup::init();
//   DistDataParallel ddp(g, Device::cpu(0), [] { return models::make_mlp(spec); }, 512);
//   SGD sgd(ddp.parameters(), lr);
//   Tensor X = ddp.randn_local({B, 512}), y = ones({ddp.local_rows(B)}, ddp.device());
//   Tensor l = L2Loss()(ddp.replica()(X), y);
//   ddp.backward(l);  sgd.step(B);  sgd.zero_grad();
//   float loss = ddp.mean(l, B).item();   // the whole batch's, on every rank
#pragma once
#include <functional>
#include <memory>
#include <vector>

#include "framework/distributed.h"
#include "framework/nn/block.h"

namespace amlp {

class DistDataParallel {
 public:
  // Collective. On a GPU (cuda:local_rank, one per rank) it makes the
  // group's NCCL communicator. Throws ShapeError for in_features <= 0,
  // DistError on every rank when make() built different parameters on
  // different ranks, or for a GPU in a build without NCCL.
  DistDataParallel(dist::ProcessGroup& g, Device device, const std::function<std::unique_ptr<Block>()>& make,
                   int64_t in_features);

  dist::ProcessGroup& group() const { return *group_; }
  Device device() const { return device_; }
  Block& replica() { return *replica_; }
  std::vector<Parameter*> parameters() { return replica_->parameters(); }

  // Rows of each rank for a global batch of `rows`: rows / size each, the
  // first rows % size one more (DataParallel::split). ShapeError when rows < size.
  std::vector<int64_t> split(int64_t rows) const;
  int64_t local_rows(int64_t rows) const;  // this rank's
  int64_t first_row(int64_t rows) const;   // this rank's first global row
  // This rank's rows of a global tensor (a queued copy onto device()).
  Tensor local(const Tensor& global) const;
  // This rank's rows of randn(global, device()): the numbers one process's
  // draw puts in them (Philox numbers depend on their position alone), and
  // the stream advances past the whole global draw. Draws only this rank's part.
  Tensor randn_local(const Shape& global) const;

  // Backward from this rank's per-sample losses (head gradient ones), each
  // parameter's gradient replaced by its sum over the ranks as described above.
  void backward(const Tensor& root);
  // Collective, queued: the mean over the global batch of `per_sample`
  // (this rank's per-sample losses, of a batch of `global_rows`), a scalar on
  // device(), the same on every rank.
  Tensor mean(const Tensor& per_sample, int64_t global_rows) const;
  // FNV-1a of every parameter's bytes, in order (blocks): equal on every rank
  // exactly when the replicas are bitwise equal.
  uint64_t checksum();

 private:
  std::vector<Tensor> parameter_values();  // the replica's parameters' tensors, in order
  dist::ProcessGroup* group_;
  Device device_;
  std::unique_ptr<Block> replica_;
};

}  // namespace amlp
