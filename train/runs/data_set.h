// data_set.h — the rows `--data X.npy --targets Y.npy` name, batch by batch:
// each batch's rows read from the files on the frontend (host
// work that the throughput model's h measures) and handed to the device by
// a queued copy (from_host). The order is the file's, or with --shuffle
// drawn again at each epoch's start from --seed.
//
//   DataSet data(settings);                  // opens both files (checked by the options already)
//   data.begin_epoch(epoch);                 // 1-based
//   auto [X, y] = data.batch(b, B, device);  // b: 0-based within the epoch; the last may be short
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "framework/asyncmlp.h"
#include "train/options/npy_file.h"
#include "train/options/options.h"

namespace amlp::train {

class DataSet {
 public:
  explicit DataSet(const Options& s);
  int64_t rows() const { return x_.rows(); }
  void begin_epoch(int epoch);
  // The rows of batch b of the epoch: B, or fewer for a last partial one.
  int64_t batch_rows(int64_t b, int64_t batch_size) const;
  // Batch b of the epoch, rows order[b*B ...] (batch_rows of them), or of
  // those the `count` from `first` (a rank's share): X (count, features), y (count).
  std::pair<Tensor, Tensor> batch(int64_t b, int64_t batch_size, Device d, int64_t first = 0, int64_t count = -1);
  // The file's row at place i of the epoch begun last: i itself, or with
  // --shuffle the epoch's permutation (the only memory kept per row, 8
  // bytes, held up front to --memory-limit, else to the host's budget:
  // train/options/data_probe.cpp data_problem).
  int64_t row(int64_t i) const;
  // The whole order of the epoch begun last (row indices into the files), made on each call.
  std::vector<int64_t> order() const;

 private:
  NpyFile x_, y_;
  bool shuffle_;
  uint64_t seed_;
  std::vector<int64_t> order_;  // with --shuffle only
  std::vector<float> xs_, ys_;  // the gathered batch, reused
};

}  // namespace amlp::train
