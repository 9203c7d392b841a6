// trainer.h — the model train_mlp trains: the d2l MLP on one device, or one
// replica per device (--devices, DataParallel), or one replica per rank
// across processes (--distributed mpi, DistDataParallel), each with its SGD optimizer.
//
//   Trainer t(settings, run_devices(settings));   // draws the weights from the current seed
//   auto [X, y] = t.draw_batch(B, F, device);     // this rank's rows of the batch
//   std::vector<Tensor> ls = t.forward_backward(X, y);   // each replica's per-sample losses
//   t.step(X.dim(0));                             // the updates, then the gradients dropped
//   float loss = t.mean_loss(ls).item();          // the whole batch's mean (blocks)
#pragma once
#include <memory>
#include <utility>
#include <vector>

#include "framework/asyncmlp.h"
#include "framework/nn/checkpoint.h"
#include "framework/nn/dist_data_parallel.h"
#include "train/options/options.h"

namespace amlp::train {

class Trainer {
 public:
  Trainer(const Options& s, const std::vector<Device>& devices);
  // Rows of each replica for a batch of `batch` (one entry with one device).
  std::vector<int64_t> rows(int64_t batch) const;
  // This process's share of a batch of `batch` rows: its first row and how
  // many (distributed: this rank's; else the whole batch).
  std::pair<int64_t, int64_t> local_slice(int64_t batch) const;
  // A batch's data, X ~ N(0, 1) (batch, features) and y = ones, on `d`:
  // distributed, this rank's rows of the one global draw.
  std::pair<Tensor, Tensor> draw_batch(int64_t batch, int64_t features, Device d) const;
  // Queues a batch's forward, loss and backward (with several devices: X and
  // y split across the replicas, the gradients all-reduced per layer) and
  // returns each replica's per-sample losses.
  std::vector<Tensor> forward_backward(const Tensor& X, const Tensor& y);
  // Each replica's SGD step for the whole batch, then set-to-none of the
  // gradients (the pending updates hold them until they ran).
  void step(int64_t batch);
  // The batch's mean loss, a scalar on the first device, for reading
  // (distributed: collective, the global batch's mean on every rank).
  // `rows`: the global batch's rows where it is not --batch-size (a kept last batch of --data).
  Tensor mean_loss(const std::vector<Tensor>& ls, int64_t rows = 0) const;
  // The parameters from a safetensors file (framework/nn/checkpoint.h), into
  // every replica (every rank reads the file); and into one, once the
  // queued work is done: rank 0's, written whole or not at all.
  // The tensors of the --load file `path` (read once: train/plan/parameters_file.h) into every replica.
  void load(const std::string& path, const std::vector<NamedValues>& tensors);
  void save(const std::string& path);

 private:
  Sequential& model(size_t i);  // a replica (each is make_mlp's Sequential)
  size_t models() const;
  std::unique_ptr<Sequential> net_;
  std::unique_ptr<DataParallel> dp_;
  std::unique_ptr<DistDataParallel> ddp_;
  int64_t batch_ = 0;  // the global batch (distributed)
  std::vector<SGD> sgds_;
  L2Loss loss_;
};

}  // namespace amlp::train
