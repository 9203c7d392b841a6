#include "train/runs/data_set.h"

#include <algorithm>
#include <numeric>
#include <random>

namespace amlp::train {

DataSet::DataSet(const Options& s)
    : x_(NpyFile::open(s.data)), y_(NpyFile::open(s.targets)), shuffle_(s.shuffle), seed_(s.seed) {
  if (shuffle_) order_.resize(static_cast<size_t>(x_.rows()));  // its bytes checked up front (data_probe.cpp data_problem)
}

int64_t DataSet::row(int64_t i) const { return shuffle_ ? order_[static_cast<size_t>(i)] : i; }

std::vector<int64_t> DataSet::order() const {
  std::vector<int64_t> o(static_cast<size_t>(rows()));
  for (int64_t i = 0; i < rows(); ++i) o[static_cast<size_t>(i)] = row(i);
  return o;
}

void DataSet::begin_epoch(int epoch) {
  if (!shuffle_) return;
  std::iota(order_.begin(), order_.end(), int64_t(0));
  // A Fisher-Yates shuffle of our own over splitmix64 draws: the same order
  // on every standard library (std::shuffle's is the library's own).
  uint64_t state = seed_ * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(epoch);
  const auto next = [&state] {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  for (size_t i = order_.size(); i > 1; --i) std::swap(order_[i - 1], order_[next() % i]);
}

int64_t DataSet::batch_rows(int64_t b, int64_t batch_size) const {
  return std::min<int64_t>(batch_size, rows() - b * batch_size);
}

std::pair<Tensor, Tensor> DataSet::batch(int64_t b, int64_t batch_size, Device d, int64_t first_row, int64_t count) {
  const int64_t first = b * batch_size + first_row;
  const int64_t n = count < 0 ? batch_rows(b, batch_size) : count;
  const int64_t f = x_.cols();
  xs_.resize(static_cast<size_t>(n * f));
  ys_.resize(static_cast<size_t>(n));
  // Each file as it was when the run opened it (one fstat a batch), then its
  // rows; a failure names the option.
  const auto gather = [&](const char* option, const NpyFile& file, float* out) {
    try {
      file.check_unchanged();
      for (int64_t i = 0; i < n; ++i) file.copy_row(row(first + i), out + i * file.cols());
    } catch (const NpyError& e) {
      throw NpyError(std::string(option) + " " + e.what());
    }
  };
  gather("--data", x_, xs_.data());
  gather("--targets", y_, ys_.data());
  return {from_host({n, f}, xs_.data(), d), from_host({n}, ys_.data(), d)};
}

}  // namespace amlp::train
