#include "framework/nn/dist_data_parallel.h"

#include <cstring>

#include "framework/core/tensor/tensor_impl.h"
#include "framework/error.h"
#include "framework/nn/autograd.h"
#include "framework/ops.h"

namespace amlp {

DistDataParallel::DistDataParallel(dist::ProcessGroup& g, Device device,
                                   const std::function<std::unique_ptr<Block>()>& make, int64_t in_features)
    : group_(&g), device_(device) {
  if (in_features <= 0)
    throw ShapeError(detail::concat("DistDataParallel: in_features must be positive, got ", in_features));
  // On a GPU the communicator is made now (collective), not at the first reduction.
  if (device_.is_cuda()) g.nccl_comm(device_.index);
  NoGradGuard ng;
  replica_ = make();
  replica_->forward(zeros({1, in_features}, device_));  // deferred initialisation draws the weights
  // Rank 0's weights to every rank; every rank drew the same count, so the
  // streams agree afterwards. The shapes are checked first: a rank whose
  // model differs is refused on every rank rather than left waiting.
  std::string shapes;
  for (Parameter* p : parameters()) shapes += p->name + " " + shape_str(p->value.shape()) + "\n";
  g.check_same("model parameters", shapes);
  // All of them as one tensor (pack): one read back, one broadcast, one write.
  const std::vector<Tensor> values = parameter_values();
  if (values.empty()) return;
  std::vector<float> v = pack(values).to_host();
  g.broadcast(v, 0);
  if (g.rank() != 0) unpack_(values, from_host({static_cast<int64_t>(v.size())}, v.data(), device_));
}

std::vector<Tensor> DistDataParallel::parameter_values() {
  std::vector<Tensor> values;
  for (Parameter* p : parameters()) values.push_back(p->value);
  return values;
}

std::vector<int64_t> DistDataParallel::split(int64_t rows) const {
  const int64_t n = group_->size();
  if (rows < n)
    throw ShapeError(detail::concat("DistDataParallel: a batch of ", rows, " rows cannot be split across ", n,
                                    " ranks (at least one row each)"));
  std::vector<int64_t> parts(static_cast<size_t>(n), rows / n);
  for (int64_t i = 0; i < rows % n; ++i) ++parts[static_cast<size_t>(i)];
  return parts;
}

int64_t DistDataParallel::local_rows(int64_t rows) const { return split(rows)[static_cast<size_t>(group_->rank())]; }

int64_t DistDataParallel::first_row(int64_t rows) const {
  const std::vector<int64_t> parts = split(rows);
  int64_t begin = 0;
  for (int i = 0; i < group_->rank(); ++i) begin += parts[static_cast<size_t>(i)];
  return begin;
}

Tensor DistDataParallel::local(const Tensor& global) const {
  if (!global.defined() || global.ndim() < 1)
    throw ShapeError("DistDataParallel::local: needs a tensor of at least one dimension");
  const int64_t begin = first_row(global.dim(0));
  return slice_rows(global, begin, begin + local_rows(global.dim(0)), device_);
}

Tensor DistDataParallel::randn_local(const Shape& global) const {
  if (global.empty()) throw ShapeError("DistDataParallel::randn_local: needs a shape of at least one dimension");
  const uint64_t total = static_cast<uint64_t>(numel(global));
  Shape mine = global;
  mine[0] = local_rows(global[0]);
  const uint64_t row = global[0] ? total / static_cast<uint64_t>(global[0]) : 0;
  const uint64_t seed = random_seed(), at = random_offset();
  manual_seed(seed, at + static_cast<uint64_t>(first_row(global[0])) * row);
  Tensor x = randn(mine, device_);
  manual_seed(seed, at + (total + 3) / 4 * 4);  // where one process's draw of the whole leaves the stream
  return x;
}

void DistDataParallel::backward(const Tensor& root) {
  if (!root.defined()) throw Error("DistDataParallel::backward: an undefined output");
  BackwardPass pass(root);  // a head of ones
  for (Tensor leaf = pass.next_leaf(); leaf.defined(); leaf = pass.next_leaf()) {
    const Tensor sum = all_reduce_sum(leaf.grad(), *group_);
    leaf.impl()->grad = sum.impl_ptr();
  }
}

Tensor DistDataParallel::mean(const Tensor& per_sample, int64_t global_rows) const {
  if (global_rows <= 0) throw Error(detail::concat("DistDataParallel::mean: global_rows must be positive, got ", global_rows));
  NoGradGuard ng;
  return scale(all_reduce_sum(sum(per_sample), *group_), 1.f / static_cast<float>(global_rows));
}

uint64_t DistDataParallel::checksum() {
  const std::vector<Tensor> values = parameter_values();
  const std::vector<float> v = values.empty() ? std::vector<float>{} : pack(values).to_host();
  return dist::text_hash(std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float)));
}

}  // namespace amlp
