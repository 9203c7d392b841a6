// test_nccl_comms.cpp — a rank of an NCCL all-reduce that fails does not
// leave the others spinning (cuda/nccl_comms.h): its clique is aborted, the
// other ranks' waits end in the usual one-line error, and the next
// all_reduce_sum makes new communicators. On a GPU machine built with NCCL;
// the two-rank case needs two GPUs. Each skips, saying why, elsewhere.
#include <string>
#include <vector>

#include "framework/core/tensor/enqueue.h"
#include "test_util.h"

namespace amlp::testing {
namespace {

using detail::enqueue;

class NcclFailure : public ::testing::Test {
 protected:
  void SetUp() override {
    SKIP_WITHOUT_GPU();
#ifndef ASYNCMLP_WITH_NCCL
    GTEST_SKIP() << "this build has no NCCL (nccl.h / libnccl not found)";
#endif
  }
  void TearDown() override {
    if (!IsSkipped()) expect_no_kernel_error_left();
  }
  ScopedBlocking async_{false};
};

// Rank `rank` of `comms` on `d`: all_reduce_nccl of x into y, or of a null
// pointer (NCCL refuses it at the launch) when `fail`.
void queue_rank(Device d, void* comm, const Tensor& x, Tensor& y, bool fail) {
  const size_t n = static_cast<size_t>(x.numel());
  enqueue(context(d), "test_all_reduce", {&x}, {&y}, {n, detail::pointer_bits(comm), fail},
          [](Backend& be, const OpArgs& a) {
    be.collectives()->all_reduce_nccl(a.scalar_bool(2) ? nullptr : a.in(0), a.out(0), a.scalar(0), a.scalar_ptr<void>(1));
  });
}

TEST_F(NcclFailure, AFailedLaunchAbortsItsCliqueAndTheNextAllReduceMakesANewOne) {
  const std::vector<void*> comms = context(Device::cuda(0)).backend->collectives()->collective_comms({0});
  ASSERT_EQ(comms.size(), 1u);
  Tensor x = full({1024}, 1.f, Device::cuda(0));
  Tensor y = empty({1024}, Device::cuda(0));
  queue_rank(Device::cuda(0), comms[0], x, y, /*fail=*/true);
  try {
    y.wait_to_read();
    ADD_FAILURE() << "a failed ncclAllReduce went unreported";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("every rank of the all-reduce aborted"), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << "one line: " << m;
  }
  const std::vector<Tensor> again = all_reduce_sum({x});  // new communicators: the old ones are gone
  EXPECT_EQ(again[0].to_host(), std::vector<float>(1024, 1.f));
}

TEST_F(NcclFailure, WhenOneRankFailsTheOtherRanksWaitEndsInAnErrorNotAHang) {
  if (cuda_device_count() < 2) GTEST_SKIP() << "one GPU visible: two ranks need two";
  const std::vector<void*> comms = context(Device::cuda(0)).backend->collectives()->collective_comms({0, 1});
  ASSERT_EQ(comms.size(), 2u);
  Tensor x0 = full({1 << 20}, 1.f, Device::cuda(0)), x1 = full({1 << 20}, 2.f, Device::cuda(1));
  Tensor y0 = empty({1 << 20}, Device::cuda(0)), y1 = empty({1 << 20}, Device::cuda(1));
  x1.wait_to_read();
  queue_rank(Device::cuda(0), comms[0], x0, y0, /*fail=*/false);  // spins until rank 1 comes
  queue_rank(Device::cuda(1), comms[1], x1, y1, /*fail=*/true);   // never does
  EXPECT_THROW(y1.wait_to_read(), Error);
  try {
    y0.wait_to_read();
    ADD_FAILURE() << "rank 0 finished an all-reduce its peer never joined";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("aborted"), std::string::npos) << e.what();
  }
  try {
    waitall();
  } catch (const Error&) {  // the same failure, if a queue still keeps it
  }
}

}  // namespace
}  // namespace amlp::testing
