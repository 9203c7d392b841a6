// test_process_group.cpp — the process group without a launcher (no mpirun):
// in a build without MPI a distributed run is refused with one line; with
// MPI the process is rank 0 of 1 and the reduction across ranks is a copy.
// The runs across processes are tests/dist/mpi_*.cpp, under mpirun.
#include "framework/distributed.h"
#include "framework/nn/dist_data_parallel.h"
#include "models/mlp.h"
#include "test_util.h"

namespace amlp::testing {
namespace {

TEST(RankPath, PutsTheRankBeforeTheExtension) {
  EXPECT_EQ(dist::rank_path("run.csv", 1), "run.rank1.csv");
  EXPECT_EQ(dist::rank_path("out/run.log.csv", 0), "out/run.log.rank0.csv");
  EXPECT_EQ(dist::rank_path("out.d/run", 3), "out.d/run.rank3");
  EXPECT_EQ(dist::rank_path(".hidden", 2), ".hidden.rank2");
}

TEST(TextHash, TellsTextsApart) {
  EXPECT_EQ(dist::text_hash("lr=0.05\n"), dist::text_hash("lr=0.05\n"));
  EXPECT_NE(dist::text_hash("lr=0.05\n"), dist::text_hash("lr=0.5\n"));
}

TEST(ProcessGroup, WithoutALauncherIsOneRankOrRefusedWithOneLine) {
  if (dist::launched_by_mpirun()) GTEST_SKIP() << "started by a launcher: tests/dist/mpi_*.cpp cover that";
  if (!dist::built_with_mpi()) {
    try {
      dist::ProcessGroup::init();
      ADD_FAILURE() << "a build without MPI made a process group";
    } catch (const dist::DistError& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
      EXPECT_NE(what.find("-DASYNCMLP_MPI=ON"), std::string::npos) << what;
    }
    EXPECT_EQ(dist::ProcessGroup::current(), nullptr);
    return;
  }
  dist::ProcessGroup& g = dist::ProcessGroup::init();
  EXPECT_EQ(&g, &dist::ProcessGroup::init());
  EXPECT_EQ(g.rank(), 0);
  EXPECT_EQ(g.size(), 1);
  EXPECT_EQ(g.local_rank(), 0);
  EXPECT_FALSE(g.distributed());
  EXPECT_NO_THROW(g.check_same("options", "lr=1"));
  EXPECT_EQ(g.gather({1.5, 2.5}), (std::vector<std::vector<double>>{{1.5, 2.5}}));
  const std::vector<float> v{1.f, -2.f, 3.5f};
  EXPECT_EQ(all_reduce_sum(from_host({3}, v.data(), Device::cpu(0)), g).to_host(), v);
}

// One rank: a DistDataParallel trains exactly as one network does (its data
// drawn by randn_local, its gradients through the reduction, a copy here).
TEST(ProcessGroup, OneRankTrainsAsOneNetwork) {
  if (dist::launched_by_mpirun() || !dist::built_with_mpi()) GTEST_SKIP() << "needs the one-rank group of an MPI build";
  dist::ProcessGroup& g = dist::ProcessGroup::init();
  const models::LayerSpec spec{{8}};
  const Device d = Device::cpu(0);
  std::vector<float> one, ranked;
  manual_seed(4);
  auto net = models::make_mlp(spec);
  {
    NoGradGuard ng;
    net->forward(zeros({1, 6}, d));
  }
  SGD sgd(net->parameters(), 0.1f);
  for (int s = 0; s < 3; ++s) {
    Tensor l = L2Loss()(net->forward(randn({10, 6}, d)), ones({10}, d));
    l.backward();
    sgd.step(10);
    sgd.zero_grad();
    NoGradGuard ng;
    one.push_back(mean(l).item());
  }
  manual_seed(4);
  DistDataParallel ddp(g, d, [&] { return models::make_mlp(spec); }, 6);
  SGD dsgd(ddp.parameters(), 0.1f);
  for (int s = 0; s < 3; ++s) {
    EXPECT_EQ(ddp.local_rows(10), 10);
    Tensor l = L2Loss()(ddp.replica()(ddp.randn_local({10, 6})), ones({10}, d));
    ddp.backward(l);
    dsgd.step(10);
    dsgd.zero_grad();
    ranked.push_back(ddp.mean(l, 10).item());
  }
  // The same weights bit for bit; the mean is formed another way (a sum, then
  // a scale), so the losses agree to rounding.
  const std::vector<Parameter*> a = net->parameters(), b = ddp.parameters();
  ASSERT_EQ(a.size(), b.size());
  for (size_t k = 0; k < a.size(); ++k) EXPECT_EQ(a[k]->value.to_host(), b[k]->value.to_host()) << a[k]->name;
  for (size_t s = 0; s < one.size(); ++s) EXPECT_NEAR(one[s], ranked[s], 1e-6f * one[s]) << "step " << s;
}

}  // namespace
}  // namespace amlp::testing
