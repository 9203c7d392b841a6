// test_run_figures.cpp — the printed summary (train/report/run_figures.cpp's
// summary_lines, from the run table's rows, and report.cpp's print_summary):
// for runs whose figures are set by hand, covering every line and each of
// its forms (a synchronized run; a failed one with back-pressure, --sync
// auto and host work the device outruns; data parallelism under run with the
// data queue and a graph; two ranks with the all-reduce and fresh memory
// priced by the probe; epochs with d taken apart), each line reads exactly
// as written here.
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>

#include "framework/asyncmlp.h"
#include "train/report/report.h"
#include "train/report/run_figures.h"

namespace amlp::train {
namespace {

std::string printed(const RunResult& r) {
  std::ostringstream out;
  print_summary(r, out);
  return out.str();
}

RunResult plain_run() {
  RunResult r;
  r.asked.options.batches = 10;
  r.asked.options.batch_size = 64;
  r.measured.device = "cpu:0";
  r.measured.wall_s = 0.5;
  r.measured.samples_per_s = 1280;
  r.measured.mem_increase_bytes = 3 << 20;
  r.measured.rss_increase_bytes = 5 << 20;
  r.measured.peak_queue_depth = 12;
  r.measured.peak_backlog_batches = 1;
  r.measured.bytes_per_batch = 3 << 20;
  r.measured.minor_faults = 40;
  r.measured.minor_faults_per_batch = 4;
  r.measured.minor_faults_steady_per_batch = 2;
  r.measured.batches_done = 10;
  r.measured.host_s_per_batch = 0.001;
  r.measured.device_s_per_batch = 0.004;
  r.measured.final_loss = 0.25;
  r.measured.memory_limit_source = "no limit";
  r.predicted.increase_bytes = 3 << 20;
  r.predicted.wall_s = 0.05;
  return r;
}

TEST(SummaryLines, ASynchronizedRun) {
  EXPECT_EQ(printed(plain_run()),
            "summary\n"
            "  device              cpu:0\n"
            "  mode                batch\n"
            "  wall time           0.500 s (10 batches of 64)\n"
            "  samples/s           1280\n"
            "  memory increase     3.1 MB tracked, 5.2 MB RSS\n"
            "  peak queue depth    12 ops, 1 batch\n"
            "  allocation          enqueue (an op's outputs get memory when it is queued)\n"
            "  predicted increase  3.1 MB = 1 x 3.1 MB per batch (measured / predicted = 1.000)\n"
            "  minor page faults   2 in the median batch of the second half, 4 per batch overall, 40 in all\n"
            "  frontend, device    h 1.000 ms, d 4.000 ms per batch (h: the loop's own time; d: the queue's busy time)\n"
            "  predicted wall      0.050 s = 10 x (h + d) (measured / predicted = 10.000)\n"
            "  final loss          0.25\n"
            "  memory limit        no limit\n");
}

TEST(SummaryLines, AFailedRunWithBackPressureSyncAutoAndHostWork) {
  RunResult r = plain_run();
  r.asked.options.sync = SyncMode{SyncPolicy::Never, 0};
  r.asked.options.max_pending_ops = 64;
  r.asked.options.max_pending_bytes = 8 << 20;
  r.asked.options.sync_chosen = "none: d > h";
  r.asked.options.alloc = AllocPolicy::Stream;
  r.asked.options.host_work = HostWork{200000, HostWorkKind::Compute};
  r.measured.status = RunStatus::Failed;
  r.measured.batches_done = 7;
  r.measured.peak_backlog_batches = 3;
  r.measured.memory_limit_bytes = 64 << 20;
  r.measured.memory_limit_source = "--memory-limit";
  r.predicted.every = 10;
  EXPECT_EQ(printed(r),
            "summary\n"
            "  device              cpu:0\n"
            "  mode                none with back-pressure (64 ops, 8.4 MB)\n"
            "  sync auto           none: d > h\n"
            "  wall time           0.500 s (7 of 10 batches of 64: failed)\n"
            "  samples/s           1280\n"
            "  memory increase     3.1 MB tracked, 5.2 MB RSS\n"
            "  peak queue depth    12 ops, 3 batches\n"
            "  allocation          stream (outputs get memory when queued; a dropped tensor's block serves the next op on its queue)\n"
            "  predicted increase  3.1 MB = one batch x 3.1 MB (blocks reused in stream order) (measured / predicted = 1.000)\n"
            "  minor page faults   2 in the median batch of the second half, 4 per batch overall, 40 in all\n"
            "  host work           0.200 ms per batch (compute)\n"
            "  frontend, device    h 1.000 ms, d 4.000 ms per batch (h: the loop's own time; d: the queue's busy time)\n"
            "  predicted wall      0.050 s = 7 x max(h, d) + min(h, d) (measured / predicted = 10.000)\n"
            "  note                the device is the bottleneck (d > h): unsynchronized, the backlog grows by about 1 - h/d batches per batch, and not waiting saves at most h per batch\n"
            "  final loss          0.25\n"
            "  memory limit        67.1 MB (--memory-limit)\n");
}

TEST(SummaryLines, DataParallelUnderRunWithTheDataQueueAndAGraph) {
  RunResult r = plain_run();
  r.asked.options.sync = SyncMode{SyncPolicy::EveryK, 4};
  r.asked.options.alloc = AllocPolicy::Run;
  r.asked.options.data_queue = true;
  r.asked.options.graph = true;
  r.asked.options.devices = {Device::cpu(0), Device::cpu(1)};
  r.measured.device = "cpu:0,cpu:1";
  r.measured.data_bytes_per_batch = 1 << 20;
  r.measured.peak_data_lead_batches = 2.5;
  r.measured.peak_data_ahead_bytes = 5 << 19;
  r.measured.working_set_bytes = 2 << 20;
  r.measured.blas_threads = 2;
  r.measured.graph = StepGraphStats{10, 2, 1, 6, 1, 1, "the ops changed", 2, 4 << 20};
  for (int i = 0; i < 2; ++i) {
    DeviceResult d;
    d.device = "cpu:" + std::to_string(i);
    d.rows_per_batch = 32;
    d.mem_increase_bytes = (3 + i) << 19;
    d.predicted_increase_bytes = 3 << 19;
    d.working_set_bytes = 1 << 20;
    d.bytes_per_batch = 3 << 19;
    d.device_s_per_batch = 0.002 + 0.001 * i;
    r.measured.per_device.push_back(d);
  }
  EXPECT_EQ(printed(r),
            "summary\n"
            "  device              cpu:0,cpu:1\n"
            "  mode                every=4\n"
            "  wall time           0.500 s (10 batches of 64)\n"
            "  samples/s           1280\n"
            "  memory increase     3.1 MB tracked, 5.2 MB RSS\n"
            "  peak queue depth    12 ops, 1 batch\n"
            "  allocation          run (an op's outputs get memory when the worker starts it)\n"
            "  graph               8 of 10 batches held: 1 recorded, 6 replayed, 1 re-recorded (verdicts: a CPU runs held ops one by one); graph slots hold 4.2 MB; 2 failed recordings ran one by one; last fallback: the ops changed\n"
            "  data                on the data queue, 1.0 MB per batch, at most 2.5 batches ahead\n"
            "  predicted increase  3.1 MB = the devices' sum (measured / predicted = 1.000)\n"
            "    cpu:0             32 rows a batch; memory +1.6 MB, predicted 1.6 MB = working set 1.0 MB + data ahead 2.6 MB (1.000); d 2.000 ms per batch\n"
            "    cpu:1             32 rows a batch; memory +2.1 MB, predicted 1.6 MB = working set 1.0 MB (1.333); d 3.000 ms per batch\n"
            "  BLAS threads        2 per CPU GEMM (the cores shared by the CPU devices)\n"
            "  minor page faults   2 in the median batch of the second half, 4 per batch overall, 40 in all\n"
            "  frontend, device    h 1.000 ms, d 4.000 ms per batch (h: the loop's own time; d: the queue's busy time)\n"
            "  predicted wall      0.050 s = 10 x (h + d) (measured / predicted = 10.000)\n"
            "  final loss          0.25\n"
            "  memory limit        no limit\n");
}

TEST(SummaryLines, TwoRanksWithTheAllReduceAndFreshMemoryPricedByTheProbe) {
  RunResult r = plain_run();
  r.asked.options.host_work = HostWork{1000000, HostWorkKind::Wait};
  r.measured.host_s_per_batch = 0.006;
  for (int i = 0; i < 2; ++i)
    r.measured.ranks.push_back(RankResult{i, 640.0 + i, 0.5, size_t(3 + i) << 20, size_t(3) << 20, 0.006, 0.004});
  r.measured.comm_alpha_s = 20e-6;
  r.measured.comm_beta_s_per_byte = 1e-10;
  r.predicted.comm_exposed_s = 0.0005;
  r.measured.fresh_bytes = 8 << 20;
  r.measured.fresh_s_per_gib = 0.25;
  r.predicted.fresh_s = 0.002;
  EXPECT_EQ(printed(r),
            "summary\n"
            "  device              cpu:0 on each of 2 ranks (--distributed mpi)\n"
            "  mode                batch\n"
            "  wall time           0.500 s (10 batches of 64)\n"
            "  samples/s           1280\n"
            "  memory increase     3.1 MB tracked, 5.2 MB RSS\n"
            "  peak queue depth    12 ops, 1 batch\n"
            "  allocation          enqueue (an op's outputs get memory when it is queued)\n"
            "  predicted increase  3.1 MB = 1 x 3.1 MB per batch (measured / predicted = 1.000)\n"
            "    rank 0            memory +3.1 MB, predicted 3.1 MB (1.000); 640 samples/s; h 6.000 ms, d 4.000 ms per batch\n"
            "    rank 1            memory +4.2 MB, predicted 3.1 MB (1.333); 641 samples/s; h 6.000 ms, d 4.000 ms per batch\n"
            "  communication       all-reduce alpha 20.0 us, beta 0.100 ms/MB; exposed 0.500 ms per batch; step predicted 4.500 ms (d + exposed), measured 50.000 ms (wall / batches)\n"
            "  minor page faults   2 in the median batch of the second half, 4 per batch overall, 40 in all\n"
            "  host work           1.000 ms per batch (wait)\n"
            "  frontend, device    h 6.000 ms, d 4.000 ms per batch (h: the loop's own time; d: the queue's busy time)\n"
            "  fresh memory        8.4 MB obtained from the system, backed at 0.250 s per GiB here (a probe's): 0.002 s (0.200 ms of d per batch)\n"
            "  predicted wall      0.050 s = 10 x (h + d), d + 0.500 ms exposed comm + 8.4 MB fresh x 0.25 s/GiB (measured / predicted = 10.000)\n"
            "  note                the frontend is the bottleneck (h > d): the device finishes each batch before the next is queued, so the backlog stays near one batch whatever the mode, and not waiting saves at most d per batch\n"
            "  final loss          0.25\n"
            "  memory limit        no limit\n");
}

TEST(SummaryLines, EpochsWithDTakenApartAndFreshMemoryCounted) {
  RunResult r = plain_run();
  r.asked.options.epochs = 2;
  r.measured.batches_done = 20;
  r.measured.d_measured = true;
  r.measured.d_kernels_s = 0.003;
  r.measured.d_fresh_s = 0.0005;
  r.measured.d_rest_s = 0.0005;
  r.measured.fresh_counted = true;
  r.measured.fresh_bytes = 6 << 20;
  r.measured.fresh_s_per_gib = 0.5;
  r.measured.backing = FreshBacking{0.01, 0.008, 4 << 20, 0.005, 2 << 20};
  r.predicted.fresh_s = 0.01;
  for (int e = 1; e <= 2; ++e) {
    EpochResult x;
    x.epoch = e;
    x.batches = 10;
    x.samples_per_s = 1000.0 * e;
    x.mem_increase_bytes = size_t(e) << 20;
    x.peak_reserved_bytes = 8 << 20;
    x.fresh_bytes = size_t(3 - e) << 20;
    x.fresh_worker_s = 0.001 * e;
    x.loss = 0.5 / e;
    r.measured.epochs.push_back(x);
  }
  EXPECT_EQ(printed(r),
            "summary\n"
            "  device              cpu:0\n"
            "  mode                batch\n"
            "  wall time           0.500 s (2 epochs of 10 batches of 64)\n"
            "  epoch 1             1000 samples/s, memory +1.0 MB (reserved 8.4 MB), fresh 2.1 MB backed (the worker 0.001 s), loss 0.5\n"
            "  epoch 2             2000 samples/s, memory +2.1 MB (reserved 8.4 MB), fresh 1.0 MB backed (the worker 0.002 s), loss 0.25\n"
            "  samples/s           1280\n"
            "  memory increase     3.1 MB tracked, 5.2 MB RSS\n"
            "  peak queue depth    12 ops, 1 batch\n"
            "  allocation          enqueue (an op's outputs get memory when it is queued)\n"
            "  predicted increase  3.1 MB = 1 x 3.1 MB per batch (measured / predicted = 1.000)\n"
            "  minor page faults   2 in the median batch of the second half, 4 per batch overall, 40 in all\n"
            "  frontend, device    h 1.000 ms, d 4.000 ms per batch (h: the loop's own time; d: the queue's busy time)\n"
            "  d per batch         4.000 ms = kernels 3.000 + fresh memory 0.500 (4.2 MB backed by the worker) + rest 0.500 (the remainder: allocation, bookkeeping; kernels + fresh = 0.875 of d); off d, the populator backed fresh memory 0.250 ms per batch\n"
            "  fresh memory        6.3 MB obtained from the system; backed by the worker (4.2 MB in 0.008 s) and by the populator thread (2.1 MB in 0.005 s, off the worker's clock; 0.250 ms per batch), 0.500 s per GiB as measured: 0.010 s of d (0.500 ms per batch)\n"
            "  predicted wall      0.050 s = 20 x (h + d) + fresh 0.010 s (measured) (measured / predicted = 10.000)\n"
            "  final loss          0.25\n"
            "  memory limit        no limit\n");
}

// The summary's lines come from the run table's rows: each row that prints
// has a place of its own, the places run 0, 1, 2, ... without a gap, and
// the first and last lines are the device's and the memory limit's rows'.
TEST(SummaryLines, EachPrintingRowHasAPlaceOfItsOwn) {
  std::map<int, std::string> by_place;
  for (const RunFigure& f : run_figures())
    if (f.printed.lines) EXPECT_TRUE(by_place.emplace(f.printed.place, f.key).second) << f.key << ": its place is taken";
  ASSERT_FALSE(by_place.empty());
  EXPECT_EQ(by_place.begin()->first, 0);
  EXPECT_EQ(by_place.rbegin()->first, int(by_place.size()) - 1);
  EXPECT_EQ(by_place.begin()->second, "device");
  EXPECT_EQ(by_place.rbegin()->second, "memory_limit_bytes");
}

}  // namespace
}  // namespace amlp::train
