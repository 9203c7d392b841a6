// data_parallel.h — one model replica per device, each minibatch split
// between them, and the gradients summed across the replicas by queued ops
// (the chapter's multi-device training; PyTorch's DistributedDataParallel in
// one process).
//
// Replica 0 is made on devices[0] and initialised as usual (its weights drawn
// from the global random stream); the others receive a copy of its weights
// (a broadcast) and draw nothing, so a seed gives the same weights and the
// same data with one device or several. backward() runs every replica's
// backward pass in step, and reduces each parameter's gradient with
// all_reduce_sum as soon as every replica has queued it, last layer first
// (DDP's order): the last layer's reduction is queued before the first
// layer's backward, so it overlaps with it. Afterwards every replica's
// parameter holds the sum of the replicas' gradients, which is the gradient
// of the whole batch for a loss summed over samples; SGD::step(global batch)
// on every replica then keeps them bitwise identical.
//
//   DataParallel dp({Device::cpu(0), Device::cpu(1)}, [] { return models::make_mlp(spec); }, 512);
//   std::vector<Tensor> xs = dp.scatter(X), ys = dp.scatter(y), ls;
//   for (size_t i = 0; i < dp.size(); ++i) ls.push_back(L2Loss()(dp.replica(i)(xs[i]), ys[i]));
//   dp.backward(ls);
//   for (SGD& s : sgds) s.step(X.dim(0));
//   float loss = dp.mean(ls).item();
#pragma once
#include <functional>
#include <memory>
#include <vector>

#include "framework/nn/block.h"

namespace amlp {

class DataParallel {
 public:
  // Throws Error for no devices, DeviceError for a repeated device or a set
  // all_reduce_sum cannot reduce in this build (all_reduce_supported()).
  DataParallel(const std::vector<Device>& devices, const std::function<std::unique_ptr<Block>()>& make,
               int64_t in_features);

  size_t size() const { return replicas_.size(); }
  const std::vector<Device>& devices() const { return devices_; }
  Block& replica(size_t i) { return *replicas_.at(i); }
  std::vector<Parameter*> parameters(size_t i) { return replicas_.at(i)->parameters(); }

  // Rows of each replica for a global batch of `rows`: rows / n each, the
  // first rows % n one more (a loss summed over samples weighs each sample
  // once however they are split). Throws ShapeError when rows < size().
  std::vector<int64_t> split(int64_t rows) const;
  // x's rows split that way: part i on devices[i] (queued copies).
  std::vector<Tensor> scatter(const Tensor& x) const;
  // Every replica's backward pass from roots[i] (head gradient ones), with the
  // gradients all-reduced per parameter as described above.
  void backward(const std::vector<Tensor>& roots);
  // The mean over every element of one tensor per replica (each replica's
  // per-sample losses: the whole batch's mean loss), a scalar on devices[0]:
  // each replica's sum, gathered in replica order.
  Tensor mean(const std::vector<Tensor>& per_replica) const;

 private:
  std::vector<Device> devices_;
  std::vector<std::unique_ptr<Block>> replicas_;
};

}  // namespace amlp
