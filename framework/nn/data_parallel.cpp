#include "framework/nn/data_parallel.h"

#include "framework/core/tensor/tensor_impl.h"
#include "framework/error.h"
#include "framework/nn/autograd.h"
#include "framework/ops.h"

namespace amlp {

DataParallel::DataParallel(const std::vector<Device>& devices, const std::function<std::unique_ptr<Block>()>& make,
                           int64_t in_features)
    : devices_(devices) {
  if (devices_.empty()) throw Error("DataParallel: no devices");
  for (size_t i = 0; i < devices_.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (devices_[i] == devices_[j]) throw DeviceError("DataParallel: device " + devices_[i].str() + " given twice");
  if (std::string why; !all_reduce_supported(devices_, &why)) throw DeviceError("DataParallel: " + why);
  if (in_features <= 0) throw ShapeError(detail::concat("DataParallel: in_features must be positive, got ", in_features));

  NoGradGuard ng;
  for (size_t i = 0; i < devices_.size(); ++i) replicas_.push_back(make());
  replicas_[0]->forward(zeros({1, in_features}, devices_[0]));  // deferred initialisation draws the weights
  const std::vector<Parameter*> src = replicas_[0]->parameters();
  // The other replicas initialise (drawing numbers they discard), then take
  // replica 0's weights; the stream is put back, so they drew nothing.
  const uint64_t seed = random_seed(), offset = random_offset();
  for (size_t i = 1; i < devices_.size(); ++i) {
    replicas_[i]->forward(zeros({1, in_features}, devices_[i]));
    manual_seed(seed, offset);
    const std::vector<Parameter*> dst = replicas_[i]->parameters();
    if (dst.size() != src.size()) throw Error("DataParallel: make() built replicas with different parameters");
    for (size_t k = 0; k < src.size(); ++k) copy_(dst[k]->value, copy_to(src[k]->value, devices_[i]));
  }
}

std::vector<int64_t> DataParallel::split(int64_t rows) const {
  const int64_t n = static_cast<int64_t>(size());
  if (rows < n)
    throw ShapeError(detail::concat("DataParallel: a batch of ", rows, " rows cannot be split across ", n,
                                    " devices (at least one row each)"));
  std::vector<int64_t> parts(size(), rows / n);
  for (int64_t i = 0; i < rows % n; ++i) ++parts[static_cast<size_t>(i)];
  return parts;
}

std::vector<Tensor> DataParallel::scatter(const Tensor& x) const {
  if (!x.defined() || x.ndim() < 1) throw ShapeError("DataParallel::scatter: needs a tensor of at least one dimension");
  std::vector<Tensor> parts;
  int64_t begin = 0;
  const std::vector<int64_t> rows = split(x.dim(0));
  for (size_t i = 0; i < size(); ++i) {
    parts.push_back(slice_rows(x, begin, begin + rows[i], devices_[i]));
    begin += rows[i];
  }
  return parts;
}

void DataParallel::backward(const std::vector<Tensor>& roots) {
  if (roots.size() != size())
    throw Error(detail::concat("DataParallel::backward: ", roots.size(), " outputs for ", size(), " replicas"));
  std::vector<std::unique_ptr<BackwardPass>> passes;
  for (const Tensor& r : roots) {
    if (!r.defined()) throw Error("DataParallel::backward: an undefined output");
    passes.push_back(std::make_unique<BackwardPass>(r));  // a head of ones
  }
  // The replicas' graphs are the same, so their leaves come in the same order.
  std::vector<Tensor> leaves(size()), grads(size());
  for (;;) {
    size_t done = 0;
    for (size_t i = 0; i < size(); ++i) {
      leaves[i] = passes[i]->next_leaf();
      done += leaves[i].defined() ? 0 : 1;
    }
    if (done == size()) break;
    for (size_t i = 0; i < size(); ++i) {
      if (!leaves[i].defined() || leaves[i].shape() != leaves[0].shape())
        throw Error("DataParallel::backward: the replicas' graphs differ");
      grads[i] = leaves[i].grad();
    }
    const std::vector<Tensor> sums = all_reduce_sum(grads);
    for (size_t i = 0; i < size(); ++i) leaves[i].impl()->grad = sums[i].impl_ptr();
  }
}

Tensor DataParallel::mean(const std::vector<Tensor>& per_replica) const {
  if (per_replica.empty()) throw Error("DataParallel::mean: nothing to average");
  NoGradGuard ng;
  int64_t count = 0;
  Tensor total;
  for (const Tensor& t : per_replica) {
    Tensor s = sum(t);
    if (s.device() != devices_[0]) s = copy_to(s, devices_[0]);
    total = total.defined() ? add(total, s) : s;
    count += t.numel();
  }
  return scale(total, 1.f / static_cast<float>(count));
}

}  // namespace amlp
