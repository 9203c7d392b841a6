// mpi_allreduce.cpp — what a reduction across processes costs here, under
// `mpirun -np N` (N >= 2 for `sizes`):
//
//   mpi_allreduce sizes            median time of all_reduce_sum across the
//                                  ranks (the queued op's MPI_Iallreduce, polled)
//                                  and of a blocking MPI_Allreduce, 4 KiB..64 MiB,
//                                  and the ring model 2(n-1)·α + 2(n-1)/n·bytes/β
//                                  fitted to the former: β from the sizes of
//                                  1 MiB and more, α from those of 64 KiB and less
//   mpi_allreduce step [B] [steps] [blas threads]
//                                  the book's MLP (Dense(2048,relu) → Dense(512,relu)
//                                  → Dense(1), 512 features), global batch B (1024)
//                                  split across the ranks, unsynchronized: samples/s,
//                                  each layer's backward on the device, and how much
//                                  of each reduction finished after the backward (exposed)
//
// One rank (no mpirun) runs `step` as one process without reductions: the baseline.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <string>
#include <vector>

#include "framework/asyncmlp.h"
#include "framework/core/context.h"
#include "framework/core/tensor/tensor_impl.h"
#include "framework/nn/dist_data_parallel.h"
#include "models/mlp.h"

using namespace amlp;

namespace {

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// Per repetition, the slowest rank's seconds (every rank gets them).
std::vector<double> slowest(std::vector<double> mine) {
  std::vector<double> out(mine.size());
  MPI_Allreduce(mine.data(), out.data(), static_cast<int>(mine.size()), MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return out;
}

int sizes(dist::ProcessGroup& g) {
  const int n = g.size();
  if (n < 2) {
    std::fprintf(stderr, "mpi_allreduce: sizes needs two ranks or more (mpirun -np 2 ...)\n");
    return 2;
  }
  if (g.rank() == 0)
    std::printf("%d ranks; median of the slowest rank per repetition\n%10s %12s %12s %12s %10s\n", n, "bytes",
                "queued_us", "blocking_us", "model_us", "busbw_GB/s");
  std::vector<double> xs, ts, tb;
  for (size_t bytes = 4096; bytes <= (size_t(64) << 20); bytes *= 4) {
    const size_t count = bytes / sizeof(float);
    std::vector<float> x(count, 1.f), y(count);
    const int reps = bytes <= (64 << 10) ? 200 : bytes <= (1 << 20) ? 50 : bytes <= (4 << 20) ? 20 : 8;
    std::vector<double> queued, blocking;
    for (int r = -3; r < reps; ++r) {
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = now_s();
      g.all_reduce_sum(x.data(), y.data(), count);
      double t1 = now_s();
      if (r >= 0) queued.push_back(t1 - t0);
      MPI_Barrier(MPI_COMM_WORLD);
      t0 = now_s();
      MPI_Allreduce(x.data(), y.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      t1 = now_s();
      if (r >= 0) blocking.push_back(t1 - t0);
    }
    if (y[0] != float(n)) std::fprintf(stderr, "mpi_allreduce: wrong sum %g\n", double(y[0]));
    xs.push_back(double(bytes));
    ts.push_back(median(slowest(queued)));
    tb.push_back(median(slowest(blocking)));
  }
  // t = a + b·bytes: the slope b from the sizes of 1 MiB and more (least
  // squares: bandwidth), the intercept a from those of 64 KiB and less
  // (their mean excess over b·bytes: latency).
  double n_l = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (size_t i = 0; i < xs.size(); ++i)
    if (xs[i] >= (1 << 20)) n_l += 1, sx += xs[i], sy += ts[i], sxx += xs[i] * xs[i], sxy += xs[i] * ts[i];
  const double b = (n_l * sxy - sx * sy) / (n_l * sxx - sx * sx);
  double a = 0, n_s = 0;
  for (size_t i = 0; i < xs.size(); ++i)
    if (xs[i] <= (64 << 10)) a += ts[i] - b * xs[i], n_s += 1;
  a = std::max(0.0, a / n_s);
  const double alpha = a / (2.0 * (n - 1)), beta = 2.0 * (n - 1) / n / b;
  if (g.rank() == 0) {
    for (size_t i = 0; i < xs.size(); ++i)
      std::printf("%10.0f %12.1f %12.1f %12.1f %10.2f\n", xs[i], ts[i] * 1e6, tb[i] * 1e6, (a + b * xs[i]) * 1e6,
                  2.0 * (n - 1) / n * xs[i] / ts[i] / 1e9);
    std::printf("ring model fitted to the queued reduction: alpha %.2f us, beta %.3f GB/s\n", alpha * 1e6, beta / 1e9);
    std::printf("scale_model: --alpha-us %.2f --beta-gbps %.3f\n", alpha * 1e6, beta / 1e9);
  }
  return 0;
}

// A point on the device's queue: the worker's clock once every op before it ran.
void mark(Device d, double* at) { context(d).queue.push("mark", [at] { *at = now_s(); }); }

int step(dist::ProcessGroup& g, int64_t batch, int steps, int threads) {
  const Device d = Device::cpu(0);
  const models::LayerSpec spec{{2048, 512}};
  constexpr int64_t kFeatures = 512, kWarmup = 3;
  set_blas_threads(threads);
  manual_seed(1);
  DistDataParallel ddp(g, d, [&] { return models::make_mlp(spec); }, kFeatures);
  SGD sgd(ddp.parameters(), 0.005f);
  L2Loss loss;
  const size_t leaves = ddp.parameters().size();
  // Per step: start, forward end, one point per leaf handed over, step end.
  std::vector<std::vector<double>> at(static_cast<size_t>(steps), std::vector<double>(leaves + 3));
  double t0 = 0;
  for (int s = -int(kWarmup); s < steps; ++s) {
    if (s == 0) {
      waitall();
      g.barrier();
      g.take_reductions();
      g.record_reductions(true);
      t0 = now_s();
    }
    double scratch[16];
    double* p = s >= 0 ? at[static_cast<size_t>(s)].data() : scratch;
    mark(d, &p[0]);
    Tensor X = ddp.randn_local({batch, kFeatures}), y = ones({ddp.local_rows(batch)}, d);
    Tensor l = loss(ddp.replica()(X), y);
    mark(d, &p[1]);
    BackwardPass pass(l, ones(l.shape(), d));
    size_t k = 0;
    for (Tensor leaf = pass.next_leaf(); leaf.defined(); leaf = pass.next_leaf(), ++k) {
      mark(d, &p[2 + k]);
      if (g.distributed()) leaf.impl()->grad = all_reduce_sum(leaf.grad(), g).impl_ptr();
    }
    sgd.step(batch);
    sgd.zero_grad();
    mark(d, &p[2 + leaves]);
  }
  waitall();
  const double wall = now_s() - t0;
  g.record_reductions(false);
  const std::vector<dist::ProcessGroup::Reduction> red = g.take_reductions();
  // Per leaf: its backward segment, and its reduction's exposed share.
  std::vector<std::vector<double>> seg(leaves), exposed_share(leaves);
  std::vector<double> fwd, tail, exposed_step;
  for (int s = 0; s < steps; ++s) {
    const std::vector<double>& p = at[static_cast<size_t>(s)];
    fwd.push_back(p[1] - p[0]);
    for (size_t k = 0; k < leaves; ++k) seg[k].push_back(p[2 + k] - p[1 + k]);
    const double bwd_end = p[1 + leaves];
    tail.push_back(p[2 + leaves] - bwd_end);
    double last = bwd_end;
    for (size_t k = 0; g.distributed() && k < leaves; ++k) {
      const dist::ProcessGroup::Reduction& r = red.at(static_cast<size_t>(s) * leaves + k);
      const double exposed = std::max(0.0, r.end_s - std::max(r.start_s, bwd_end));
      exposed_share[k].push_back(exposed / std::max(1e-12, r.end_s - r.start_s));
      last = std::max(last, r.end_s);
    }
    exposed_step.push_back(last - bwd_end);
  }
  const std::vector<std::vector<double>> rates = g.gather({double(steps) * double(batch) / wall});
  if (g.rank() != 0) return 0;
  std::printf("%d rank(s), %d BLAS thread(s) each, global batch %lld (%lld rows on rank 0), %d steps\n", g.size(),
              threads, static_cast<long long>(batch), static_cast<long long>(ddp.local_rows(batch)), steps);
  std::printf("samples/s %.0f (rank 0's wall %.3f s); step %.2f ms\n", rates[0][0], wall, wall / steps * 1e3);
  std::printf("forward+loss median %.2f ms\n", median(fwd) * 1e3);
  std::string backward;
  for (size_t k = 0; k < leaves; ++k) {
    std::printf("leaf %zu handed over: backward segment median %.3f ms", k, median(seg[k]) * 1e3);
    if (g.distributed())
      std::printf(", its reduction (%zu bytes) exposed share median %.2f", red.at(k).bytes, median(exposed_share[k]));
    std::printf("\n");
  }
  std::printf("after the backward: reductions still running (exposed) median %.3f ms; update+wait %.3f ms\n",
              median(exposed_step) * 1e3, median(tail) * 1e3);
  for (size_t k = 0; k + 1 < leaves; k += 2)
    backward += (backward.empty() ? "" : ",") + std::to_string((median(seg[k]) + median(seg[k + 1])) * 1e3);
  std::printf("scale_model: --ranks %d --forward-ms %.3f --backward-ms %s\n", g.size(), median(fwd) * 1e3,
              backward.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode != "sizes" && mode != "step") {
    std::fprintf(stderr, "usage: mpi_allreduce sizes | step [global batch] [steps] [blas threads]\n");
    return 2;
  }
  try {
    dist::ProcessGroup& g = dist::ProcessGroup::init();
    int rc = 0;
    if (mode == "sizes") {
      rc = sizes(g);
    } else {
      const int cores = std::max(1, int(std::thread::hardware_concurrency()) / g.local_size());
      rc = step(g, argc > 2 ? std::atoll(argv[2]) : 1024, argc > 3 ? std::atoi(argv[3]) : 20,
                argc > 4 ? std::atoi(argv[4]) : cores);
    }
    waitall();
    g.finalize();
    return rc;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mpi_allreduce: error: %s\n", e.what());
    if (dist::ProcessGroup* g = dist::ProcessGroup::current(); g && g->distributed()) g->abort_all(e.what(), 1);
    return 1;
  }
}
