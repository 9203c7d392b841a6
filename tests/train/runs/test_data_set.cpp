// Covers train/runs/data_set.cpp and train_mlp's --data, --targets,
// --shuffle and --last-batch (train/options/data_probe.cpp's data_problem):
// batches are the files' rows in order (or a per-epoch permutation from the
// seed), a last partial batch dropped or kept, and every wrong file or
// combination is one line and exit 2. No timing assertions.
#include <gtest/gtest.h>
#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "npy_writer.h"
#include "sanitized.h"
#include "train/runs/data_set.h"
#include "train/train_test_util.h"

namespace {

using amlp::testing::read_csv_strict;
using amlp::testing::read_json;
using amlp::testing::run_train_mlp;
using amlp::testing::ScratchDir;
using amlp::testing::write_linear_data;
using amlp::testing::write_npy;

// X(r, c) = 10 r + c, y(r) = r: each value names its row.
struct Files {
  ScratchDir dir;
  std::string x = dir.file("x.npy"), y = dir.file("y.npy");
  explicit Files(int64_t rows, int64_t cols = 3) {
    std::vector<float> xs, ys;
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) xs.push_back(float(10 * r + c));
      ys.push_back(float(r));
    }
    write_npy(x, {rows, cols}, xs);
    write_npy(y, {rows}, ys);
  }
};

amlp::train::Options options(const Files& f, bool shuffle, uint64_t seed = 1) {
  amlp::train::Options o;
  o.data = f.x;
  o.targets = f.y;
  o.shuffle = shuffle;
  o.seed = seed;
  return o;
}

TEST(DataSet, BatchesAreTheFilesRowsInOrderTheLastOneShort) {
  Files f(10);
  amlp::train::DataSet data(options(f, false));
  data.begin_epoch(1);
  const amlp::Device cpu0 = amlp::Device::cpu(0);
  for (int64_t b = 0; b < 3; ++b) {
    auto [X, y] = data.batch(b, 4, cpu0);
    const int64_t n = b < 2 ? 4 : 2;
    ASSERT_EQ(X.dim(0), n);
    ASSERT_EQ(X.dim(1), 3);
    const std::vector<float> xs = X.to_host(), ys = y.to_host();
    for (int64_t i = 0; i < n; ++i) {
      const int64_t r = 4 * b + i;
      EXPECT_EQ(ys[i], float(r));
      for (int64_t c = 0; c < 3; ++c) EXPECT_EQ(xs[i * 3 + c], float(10 * r + c)) << "row " << r;
    }
  }
}

TEST(DataSet, ShuffleDrawsAPermutationPerEpochFromTheSeed) {
  Files f(50, 1);
  amlp::train::DataSet a(options(f, true, 7)), b(options(f, true, 7)), c(options(f, true, 8)), plain(options(f, false));
  std::vector<int64_t> in_order(50);
  for (int64_t i = 0; i < 50; ++i) in_order[i] = i;
  a.begin_epoch(1);
  b.begin_epoch(1);
  c.begin_epoch(1);
  plain.begin_epoch(1);
  std::vector<int64_t> sorted = a.order();
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, in_order) << "a permutation of the rows";
  EXPECT_NE(a.order(), in_order);
  EXPECT_EQ(a.order(), b.order()) << "the same seed, the same order";
  EXPECT_NE(a.order(), c.order()) << "another seed, another order";
  EXPECT_EQ(plain.order(), in_order);
  const std::vector<int64_t> first = a.order();
  a.begin_epoch(2);
  EXPECT_NE(a.order(), first) << "drawn again each epoch";
}

// Files declaring `rows` rows of one feature, sparse (their data a hole): what a
// reader spends on the rows it is told of, not on bytes it reads.
void sparse_files(ScratchDir& dir, int64_t rows) {
  const auto make = [&](const std::string& path, const std::string& shape) {
    std::ofstream(path, std::ios::binary)
        << amlp::testing::npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }", {});
    const std::string h = amlp::testing::read_file(path);
    EXPECT_EQ(::truncate(path.c_str(), static_cast<off_t>(h.size() + rows * sizeof(float))), 0);
  };
  make(dir.file("x.npy"), "(" + std::to_string(rows) + ", 1)");
  make(dir.file("y.npy"), "(" + std::to_string(rows) + ",)");
}

// Without --shuffle the rows are the file's, in order: no bookkeeping per
// declared row (a file declaring 2^26 rows took 512 MiB of order before its
// first batch, outside --memory-limit).
TEST(DataSet, InFileOrderItKeepsNothingPerRow) {
  if (amlp::kSanitized) GTEST_SKIP() << "the sanitizers' allocator keeps its own counts";
  ScratchDir dir;
  const int64_t rows = int64_t(1) << 26;
  sparse_files(dir, rows);
  amlp::train::Options o;
  o.data = dir.file("x.npy");
  o.targets = dir.file("y.npy");
  const size_t before = ::mallinfo2().uordblks;
  amlp::train::DataSet d(o);
  d.begin_epoch(1);
  d.begin_epoch(2);
  EXPECT_LT(::mallinfo2().uordblks - before, size_t(1) << 20) << "bytes allocated for " << rows << " rows";
  EXPECT_EQ(d.rows(), rows);
  EXPECT_EQ(d.row(rows - 1), rows - 1);
}

// With --shuffle the order (8 bytes a row) is held to --memory-limit, else
// the host's budget, up front: exit 2 naming --shuffle, not a failed run.
TEST(TrainMlpData, AShuffleOrderPastTheMemoryLimitIsRefusedUpFront) {
  ScratchDir dir;
  sparse_files(dir, int64_t(1) << 26);
  const amlp::testing::Ran r = run_train_mlp("--device cpu --quiet --batch-size 64 --hidden 4 --shuffle "
                                             "--memory-limit 64MiB --data " + dir.file("x.npy") + " --targets " +
                                             dir.file("y.npy"));
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(r.err, "train_mlp: error: --shuffle: the order of --data's 67108864 rows takes 536870912 bytes of host "
                   "memory, past the budget of 67108864 bytes (--memory-limit): shuffle the file beforehand, or drop "
                   "--shuffle\n");
  EXPECT_EQ(r.out, "");
}

// train_mlp on the files: one pass is N / B batches (dropped) or their
// ceiling (kept); targets linear in X are learnt (the loss falls).
TEST(TrainMlpData, AnEpochIsOnePassOverTheRows) {
  ScratchDir dir;
  const std::string x = dir.file("x.npy"), y = dir.file("y.npy");
  write_linear_data(x, y, 1000, 4, /*y_divisor=*/2, /*y_column=*/true);  // y = 1 + sum(x) / 2, x in [-1, 1]
  for (const char* last : {"drop", "keep"}) {
    const auto r = run_train_mlp("--device cpu --quiet --batch-size 64 --hidden 16 --lr 0.05 --epochs 2 --data " + x +
                                 " --targets " + y + " --last-batch " + last + " --summary-json " +
                                 dir.file("s.json") + " --memory-log " + dir.file("m.csv"));
    ASSERT_EQ(r.code, 0) << r.err;
    const int per_epoch = std::string(last) == "drop" ? 15 : 16;
    const auto s = read_json(dir.file("s.json"));
    EXPECT_EQ(s[0].at("batches"), per_epoch) << last;
    EXPECT_EQ(s[0].at("batches_done"), 2 * per_epoch) << last;
    const auto log = read_csv_strict(dir.file("m.csv"));
    ASSERT_EQ(log.rows.size(), size_t(2 * per_epoch)) << last;
    EXPECT_LT(std::stod(log.field(log.rows.size() - 1, "loss")), std::stod(log.field(0, "loss"))) << last;
  }
}

// Two CPU devices split each batch of the file's rows as one device trains it:
// the same losses (the replicas' gradients summed, within rounding).
TEST(TrainMlpData, TwoDevicesTrainAsOne) {
  ScratchDir dir;
  const std::string x = dir.file("x.npy"), y = dir.file("y.npy");
  write_linear_data(x, y, 640, 8, /*y_divisor=*/2, /*y_column=*/false);
  const std::string common = "--quiet --batch-size 64 --hidden 16 --lr 0.05 --epochs 2 --shuffle --data " + x +
                             " --targets " + y + " --memory-log ";
  const auto one = run_train_mlp("--device cpu " + common + dir.file("one.csv"));
  const auto two = run_train_mlp("--devices cpu:0,cpu:1 " + common + dir.file("two.csv"));
  ASSERT_EQ(one.code, 0) << one.err;
  ASSERT_EQ(two.code, 0) << two.err;
  const auto a = read_csv_strict(dir.file("one.csv")), b = read_csv_strict(dir.file("two.csv"));
  ASSERT_EQ(a.rows.size(), 20u);
  ASSERT_EQ(b.rows.size(), 20u);
  for (size_t i = 0; i < a.rows.size(); ++i) {
    const double x = std::stod(a.field(i, "loss")), y = std::stod(b.field(i, "loss"));
    EXPECT_NEAR(y, x, 1e-5 * std::fabs(x)) << "batch " << i + 1;
  }
}

TEST(TrainMlpData, WrongFilesAndCombinationsAreOneLineAndExitTwo) {
  Files f(100, 4);
  ScratchDir dir;
  write_npy(dir.file("y99.npy"), {99}, std::vector<float>(99));
  write_npy(dir.file("y2d.npy"), {100, 2}, std::vector<float>(200));
  {
    std::ofstream(dir.file("junk.npy")) << "not numpy";
  }
  const std::string d = " --data " + f.x, t = " --targets " + f.y;
  const std::pair<std::string, std::string> cases[] = {
      {d, "--data needs --targets Y.npy"},
      {t, "--targets needs --data X.npy"},
      {"--shuffle", "--shuffle orders --data's rows"},
      {"--last-batch keep", "--last-batch keep is --data's"},
      {"--last-batch all" + d + t, "--last-batch must be drop or keep (got 'all')"},
      {" --data " + dir.file("junk.npy") + t, "not a NumPy file"},
      {d + " --targets " + dir.file("y99.npy"), "has 99 rows, --data"},
      {d + " --targets " + dir.file("y2d.npy"), "it must be (rows,) or (rows, 1)"},
      {" --data " + f.y + " --targets " + dir.file("y99.npy"), "it must be (rows, features)"},
      {d + t + " --features 5", "--features 5 disagrees with --data"},
      {d + t + " --batches 3", "--batches with --data"},
      {d + t + " --batch-size 101", "has 100 rows, fewer than a batch of 101"},
      {" --data " + f.x + " --targets " + f.x, "--data and --targets name one file"},
      {d + t + " --data-queue", "not with --data-queue"},
      {d + t + " --summary-json " + f.y, "--summary-json would overwrite the targets file"},
  };
  for (const auto& [args, want] : cases) {
    const std::string size = args.find("--batch-size") == std::string::npos ? "--batch-size 8 " : "";
    const auto r = run_train_mlp("--device cpu --quiet --hidden 4 " + size + args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.err;
    EXPECT_EQ(r.err_lines(), 1u) << args << "\n" << r.err;
    EXPECT_NE(r.err.find(want), std::string::npos) << args << "\n" << r.err;
  }
}

}  // namespace
