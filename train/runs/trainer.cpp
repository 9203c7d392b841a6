#include "train/runs/trainer.h"

#include "models/mlp.h"
#include "train/runs/distributed_run.h"

namespace amlp::train {

Trainer::Trainer(const Options& s, const std::vector<Device>& devices) : batch_(s.batch_size) {
  if (dist::ProcessGroup* g = rank_group(s)) {  // the same weights as one process: rank 0's, broadcast
    ddp_ = std::make_unique<DistDataParallel>(*g, devices[0], [&] { return models::make_mlp(s.hidden); }, s.features);
    sgds_.emplace_back(ddp_->parameters(), s.lr, s.momentum);
  } else if (s.devices.empty()) {
    net_ = models::make_mlp(s.hidden);
    NoGradGuard ng;
    net_->forward(zeros({1, s.features}, devices[0]));  // deferred initialisation; draws only the weights
    sgds_.emplace_back(net_->parameters(), s.lr, s.momentum);
  } else {
    dp_ = std::make_unique<DataParallel>(devices, [&] { return models::make_mlp(s.hidden); }, s.features);
    for (size_t i = 0; i < dp_->size(); ++i) sgds_.emplace_back(dp_->parameters(i), s.lr, s.momentum);
  }
}

std::vector<int64_t> Trainer::rows(int64_t batch) const {
  if (ddp_) return {ddp_->local_rows(batch)};
  return dp_ ? dp_->split(batch) : std::vector<int64_t>{batch};
}

std::pair<int64_t, int64_t> Trainer::local_slice(int64_t batch) const {
  if (ddp_) return {ddp_->first_row(batch), ddp_->local_rows(batch)};
  return {0, batch};
}

std::pair<Tensor, Tensor> Trainer::draw_batch(int64_t batch, int64_t features, Device d) const {
  if (ddp_) return {ddp_->randn_local({batch, features}), ones({ddp_->local_rows(batch)}, d)};
  return {randn({batch, features}, d), ones({batch}, d)};
}

std::vector<Tensor> Trainer::forward_backward(const Tensor& X, const Tensor& y) {
  if (ddp_) {  // this rank's rows; each gradient summed across the ranks as it is queued
    Tensor l = loss_(ddp_->replica().forward(X), y);
    ddp_->backward(l);
    return {l};
  }
  if (!dp_) {
    Tensor l = loss_(net_->forward(X), y);  // (B)
    l.backward();
    return {l};
  }
  // The batch's data was drawn once; each replica takes its rows.
  const std::vector<Tensor> xs = dp_->scatter(X), ys = dp_->scatter(y);
  std::vector<Tensor> ls;
  for (size_t i = 0; i < dp_->size(); ++i) ls.push_back(loss_(dp_->replica(i).forward(xs[i]), ys[i]));
  dp_->backward(ls);  // each layer's gradients all-reduced as soon as every replica queued them
  return ls;
}

void Trainer::step(int64_t batch) {
  for (SGD& g : sgds_) {
    g.step(batch);  // the whole batch's gradient (summed across replicas): every replica takes the same step
    g.zero_grad();
  }
}

Tensor Trainer::mean_loss(const std::vector<Tensor>& ls, int64_t rows) const {
  NoGradGuard ng;
  if (ddp_) return ddp_->mean(ls[0], rows > 0 ? rows : batch_);
  return dp_ ? dp_->mean(ls) : mean(ls[0]);
}

Sequential& Trainer::model(size_t i) {
  if (ddp_) return static_cast<Sequential&>(ddp_->replica());
  if (dp_) return static_cast<Sequential&>(dp_->replica(i));
  return *net_;
}

size_t Trainer::models() const { return dp_ ? dp_->size() : 1; }

void Trainer::load(const std::string& path, const std::vector<NamedValues>& tensors) {
  for (size_t i = 0; i < models(); ++i) load_parameters(path, tensors, model(i));
}

void Trainer::save(const std::string& path) {
  if (ddp_ && ddp_->group().rank() != 0) return;
  save_parameters(path, model(0));
}

}  // namespace amlp::train
