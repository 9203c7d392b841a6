// Covers framework/nn/dist_data_parallel.cpp, framework/ops/process_all_reduce.cpp, framework/dist/process_group.cpp (under mpirun).
// data parallelism across processes, run by CTest as
// `mpirun -np 2` (tests/CMakeLists.txt): two ranks train as one process with
// the same global batch, their replicas stay bitwise equal, the reduced
// gradient is the whole batch's (finite differences through the reduction
// across processes), and a layer's reduction completes while the device's
// queue still holds the earlier layers' backward.
#include <cfloat>
#include <cmath>
#include <random>

#include "framework/core/context.h"
#include "framework/distributed.h"
#include "framework/nn/dist_data_parallel.h"
#include "models/mlp.h"
#include "nn/one_network.h"
#include "ops/gradcheck.h"
#include "test_util.h"

namespace amlp::testing {
namespace {

const models::LayerSpec kSpec{{64, 16}};  // the d2l MLP's shape, scaled down
constexpr int64_t kFeatures = 32;
const Device kCpu = Device::cpu(0);

dist::ProcessGroup& group() { return *dist::ProcessGroup::current(); }

#define NEED_RANKS()                                                                               \
  do {                                                                                             \
    if (group().size() < 2) GTEST_SKIP() << "one rank: run under mpirun -np 2 (CTest does)";      \
  } while (0)

std::unique_ptr<Block> make_net() { return models::make_mlp(kSpec); }

// Every rank's 64-bit checksum, on rank 0 (as two exact halves).
std::vector<uint64_t> gather_checksums(uint64_t c) {
  std::vector<uint64_t> out;
  for (const std::vector<double>& row : group().gather({double(c >> 32), double(c & 0xffffffffu)}))
    out.push_back((uint64_t(row[0]) << 32) | uint64_t(row[1]));
  return out;
}

// 20 SGD steps with a global batch of 64 (an even split) and 63 (uneven):
// every loss within 1e-5 relative of one process's, the losses read only at
// the end (nothing waits in between but the checksums), and after every step
// every rank's replica bitwise equal (checksums gathered to rank 0).
TEST(MpiDataParallel, TwoRanksFollowOneProcessOver20Steps) {
  NEED_RANKS();
  constexpr int kSteps = 20;
  constexpr float kLr = 0.05f;
  for (int64_t batch : {64, 63}) {
    SCOPED_TRACE("global batch " + std::to_string(batch));
    const std::vector<float> one = one_network_losses(make_net, kFeatures, 5, batch, kSteps, kLr);
    manual_seed(5);
    DistDataParallel ddp(group(), kCpu, make_net, kFeatures);
    SGD sgd(ddp.parameters(), kLr);
    L2Loss loss;
    std::vector<Tensor> means;
    const uint64_t reductions0 = data_queue_stats(kCpu).pushed;
    for (int s = 0; s < kSteps; ++s) {
      Tensor X = ddp.randn_local({batch, kFeatures}), y = ones({ddp.local_rows(batch)}, kCpu);
      Tensor l = loss(ddp.replica()(X), y);
      ddp.backward(l);
      sgd.step(batch);
      sgd.zero_grad();
      means.push_back(ddp.mean(l, batch));
      const std::vector<uint64_t> sums = gather_checksums(ddp.checksum());
      for (size_t r = 1; r < sums.size(); ++r)
        ASSERT_EQ(sums[r], sums[0]) << "step " << s << ": rank " << r << "'s replica differs from rank 0's";
    }
    // Six parameters' gradients and one loss per step, each one op on the communication queue.
    EXPECT_EQ(data_queue_stats(kCpu).pushed - reductions0, uint64_t(kSteps) * 7);
    for (int s = 0; s < kSteps; ++s) {
      const float two = means[static_cast<size_t>(s)].item();
      EXPECT_LE(std::abs(one[s] - two), 1e-5f * std::abs(one[s])) << "step " << s << ": " << one[s] << " vs " << two;
    }
    EXPECT_LT(one.back(), one.front()) << "the loss falls: the comparison is of training, not of a constant";
  }
}

// The reduced gradient is the gradient of the whole batch's summed loss:
// analytic (ddp.backward, through the reduction across processes) against
// central differences of the loss summed over every rank's rows, each weight
// moved on every rank at once (tests/ops/gradcheck.h's bound, fd_bound, in double).
TEST(MpiDataParallel, ReducedGradientMatchesFiniteDifferences) {
  NEED_RANKS();
  manual_seed(3);
  const models::LayerSpec spec{{3}};
  for (int attempt = 0; attempt < 20; ++attempt) {
    DistDataParallel ddp(group(), kCpu, [&] { return models::make_mlp(spec); }, 2);
    std::mt19937 rng(static_cast<uint32_t>(attempt));  // the same weights on every rank, of order one
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    const std::vector<Parameter*> ps = ddp.parameters();
    auto write = [&](size_t k, const std::vector<float>& v) {
      NoGradGuard ng;
      copy_(ps[k]->value, from_host(ps[k]->value.shape(), v.data(), kCpu));
    };
    for (size_t k = 0; k < ps.size(); ++k) {
      std::vector<float> v(static_cast<size_t>(ps[k]->value.numel()));
      for (float& x : v) x = u(rng);
      write(k, v);
    }
    constexpr int64_t kBatch = 5;  // split 3 + 2
    Tensor X = randn({kBatch, 2}, kCpu), y = randn({kBatch}, kCpu);
    const Tensor x = ddp.local(X), t = ddp.local(y);
    bool near_kink = false;  // every hidden pre-activation |z| > 0.1, on every rank (same X, same weights)
    {
      NoGradGuard ng;
      for (float z : linear(X, ps[0]->value, ps[1]->value).to_host()) near_kink |= std::abs(z) < 0.1f;
    }
    if (near_kink) continue;
    auto total = [&] {  // the loss summed over every rank's rows
      NoGradGuard ng;
      double mine = 0;
      for (float v : l2_loss(ddp.replica()(x), t).to_host()) mine += v;
      const float f = static_cast<float>(mine);
      return double(all_reduce_sum(from_host({1}, &f, kCpu), group()).item());
    };
    ddp.backward(l2_loss(ddp.replica()(x), t));
    const double y0 = total();
    for (size_t k = 0; k < ps.size(); ++k) {
      const std::vector<float> g = ps[k]->value.grad().to_host(), base = ps[k]->value.to_host();
      for (size_t j = 0; j < base.size(); ++j) {
        auto at = [&](float x) {  // the summed loss with element j of parameter k at x, on every rank
          std::vector<float> v = base;
          v[j] = x;
          write(k, v);
          return total();
        };
        const float xp = base[j] + 1e-2f, xm = base[j] - 1e-2f;
        const double fp = at(xp), fm = at(xm), step = double(xp) - double(xm);
        write(k, base);
        const double num = (fp - fm) / step;
        EXPECT_LE(std::abs(g[j] - num), fd_bound(g[j], num, std::max({std::abs(y0), std::abs(fp), std::abs(fm)}), step))
            << "parameter " << k << "[" << j << "]: analytic " << g[j] << ", numeric " << num;
      }
    }
    return;
  }
  FAIL() << "no test point away from the ReLU kinks in 20 tries";
}

// The last layer's reduction completes while the device's queue still holds
// the first layer's backward: a gate on the device's queue, queued between
// the two, lets nothing after it run until that reduction has completed on
// the communication queue. Were the reduction waiting for the whole backward
// (or for the frontend), the gate would time out and the pass fail.
TEST(MpiDataParallel, TheLastLayersReductionCompletesBeforeTheFirstLayersBackwardRuns) {
  NEED_RANKS();
  manual_seed(2);
  DistDataParallel ddp(group(), kCpu, make_net, kFeatures);
  Tensor l = l2_loss(ddp.replica()(ddp.randn_local({16, kFeatures})), ones({ddp.local_rows(16)}, kCpu));
  BackwardPass pass(l, ones(l.shape(), kCpu));
  Tensor leaf = pass.next_leaf();  // the last layer's weight or bias
  ASSERT_TRUE(leaf.defined());
  const Tensor reduced = all_reduce_sum(leaf.grad(), group());
  Queue* comm = static_cast<Queue*>(storage(reduced)->last_writer().queue);
  const uint64_t seq = storage(reduced)->last_writer().seq;
  ASSERT_NE(comm, &context(kCpu).queue) << "the reduction went to the device's own queue";
  const uint64_t gate = context(kCpu).queue.push("gate", [comm, seq] {
    const auto until = std::chrono::steady_clock::now() + kHangGuard;
    while (!comm->complete(seq))
      if (std::chrono::steady_clock::now() > until) throw Error("the reduction did not complete before the gate");
      else std::this_thread::yield();
  });
  const uint64_t before_rest = queue_stats(kCpu).pushed;
  size_t leaves = 1;
  for (Tensor t = pass.next_leaf(); t.defined(); t = pass.next_leaf()) {
    all_reduce_sum(t.grad(), group());
    ++leaves;
  }
  EXPECT_EQ(leaves, ddp.parameters().size());
  EXPECT_GT(queue_stats(kCpu).pushed, before_rest) << "the earlier layers' backward was queued after the gate";
  EXPECT_NO_THROW(context(kCpu).queue.wait_for(gate));
  EXPECT_NO_THROW(waitall());
}

// A stop asked by one rank at batch k (an interrupt) is every rank's answer
// at batch k + lag, and no earlier: the ranks stop after the same batch.
TEST(MpiDataParallel, AStopOnOneRankStopsEveryRankAfterTheSameBatch) {
  NEED_RANKS();
  for (int lag : {0, 1, 4}) {
    SCOPED_TRACE("lag " + std::to_string(lag));
    int stopped_at = -1;
    for (int batch = 0; batch < 20 && stopped_at < 0; ++batch) {
      const bool mine = group().rank() == group().size() - 1 && batch == 5;
      if (group().agree_to_stop(mine, lag)) stopped_at = batch;
    }
    EXPECT_EQ(stopped_at, 5 + lag);
    const std::vector<std::vector<double>> all = group().gather({double(stopped_at)});
    for (size_t r = 0; r < all.size(); ++r) EXPECT_EQ(all[r][0], double(5 + lag)) << "rank " << r;
    // The votes still in flight are drained before the next lag is tried.
    for (int k = 0; k < lag; ++k) EXPECT_FALSE(group().agree_to_stop(false, lag));
  }
}

// On GPUs: one GPU per rank, an NCCL communicator bootstrapped over MPI, the
// reduction ncclAllReduce on each rank's stream; then a few steps of
// training keep the replicas bitwise equal.
TEST(MpiDataParallel, NcclReducesAcrossRanksOnTheirGpus) {
  NEED_RANKS();
  SKIP_WITHOUT_GPU();
#ifndef ASYNCMLP_WITH_NCCL
  GTEST_SKIP() << "this build has no NCCL (nccl.h / libnccl not found)";
#endif
  if (cuda_device_count() < group().local_size())
    GTEST_SKIP() << "one GPU per rank: " << group().local_size() << " ranks on this host, " << cuda_device_count()
                 << " GPU(s)";
  const Device gpu = Device::cuda(group().local_rank());
  std::vector<float> v(1000);
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(i) * float(group().rank() + 1);
  const std::vector<float> sum = all_reduce_sum(from_host({1000}, v.data(), gpu), group()).to_host();
  const float ranks = float(group().size() * (group().size() + 1) / 2);  // 1 + 2 + ... + size
  for (size_t i = 0; i < sum.size(); ++i) ASSERT_EQ(sum[i], float(i) * ranks) << "element " << i;

  manual_seed(9);
  DistDataParallel ddp(group(), gpu, make_net, kFeatures);
  SGD sgd(ddp.parameters(), 0.05f);
  for (int s = 0; s < 3; ++s) {
    Tensor l = L2Loss()(ddp.replica()(ddp.randn_local({64, kFeatures})), ones({ddp.local_rows(64)}, gpu));
    ddp.backward(l);
    sgd.step(64);
    sgd.zero_grad();
    const std::vector<uint64_t> sums = gather_checksums(ddp.checksum());
    for (size_t r = 1; r < sums.size(); ++r) ASSERT_EQ(sums[r], sums[0]) << "step " << s << ", rank " << r;
  }
}

}  // namespace
}  // namespace amlp::testing

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  amlp::dist::ProcessGroup& g = amlp::dist::ProcessGroup::init();
  const int rc = RUN_ALL_TESTS();
  amlp::waitall();
  g.finalize();
  return rc;
}
