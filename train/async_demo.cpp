// async_demo.cpp — the "Asynchronous Computation" chapter's microbenchmarks,
// one subcommand each. Every subcommand prints what it measured and, in a few
// plain lines, what the numbers mean.
//
//   async_demo all                                   # everything, --device auto
//   async_demo sync-vs-async --ops 20000 --repeats 3
//   async_demo cpu-vs-device --device cpu --size 2000
//
// Timing: std::chrono::steady_clock; a warm-up first (the pools cache every
// buffer size, OpenBLAS starts its threads); medians over --repeats.
#include <cblas.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <optional>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "framework/asyncmlp.h"

namespace po = boost::program_options;
using amlp::Device;
using amlp::Tensor;

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

// "12.3 ms", "4.56 µs", "1.23 s"
std::string human(double s) {
  char buf[32];
  const double a = std::fabs(s);
  if (a >= 1.0) std::snprintf(buf, sizeof buf, "%.3f s", s);
  else if (a >= 1e-3) std::snprintf(buf, sizeof buf, "%.2f ms", s * 1e3);
  else std::snprintf(buf, sizeof buf, "%.2f µs", s * 1e6);
  std::string out = buf;
  if (out.find("µ") != std::string::npos) out.insert(0, " ");  // printf widths count bytes; µ is two
  return out;
}

// "load average 2.54 on 2 cores" — context for timings on a shared machine.
std::string machine_load() {
  double l1 = -1;
  if (FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf", &l1) != 1) l1 = -1;
    std::fclose(f);
  }
  char buf[64];
  if (l1 < 0) std::snprintf(buf, sizeof buf, "%u cores", std::thread::hardware_concurrency());
  else std::snprintf(buf, sizeof buf, "load average %.2f on %u cores", l1, std::thread::hardware_concurrency());
  return buf;
}

struct Options {
  std::string command;
  Device device;
  bool fell_back = false;  // --device auto found no GPU
  int64_t size = 0;        // 0: each subcommand's default, scaled to the device
  int repeats = 5;
  int64_t ops = 10000;     // sync-vs-async's N
};

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

int64_t size_or(const Options& o, int64_t cpu, int64_t cuda) {
  return o.size ? o.size : (o.device.is_cuda() ? cuda : cpu);
}

void heading(const std::string& name, const std::string& what) {
  std::printf("\n== %s: %s ==\n", name.c_str(), what.c_str());
}

// The plain-English part: each line prefixed so it stands apart from numbers.
void explain(const std::vector<std::string>& lines) {
  for (const std::string& l : lines) std::printf("   > %s\n", l.c_str());
  std::fflush(stdout);
}

// --- queued ---------------------------------------------------------------------
// The chapter's first benchmark: 10 × (a = randn(n, n); b = a·a) queued, then
// waitall(). How long the frontend took to queue it vs until it finished.
void run_queued(const Options& o) {
  const Device d = o.device;
  const int64_t n = size_or(o, 1000, 4096);
  constexpr int kIters = 10;
  auto queue_work = [&] {
    Tensor b;
    for (int i = 0; i < kIters; ++i) {
      Tensor a = amlp::randn({n, n}, d);
      b = amlp::matmul(a, a);
    }
    return b;
  };
  heading("queued", "work queued vs work finished on " + d.str());
  queue_work();
  amlp::waitall();  // warm-up
  std::vector<double> queued, finished, depth;
  for (int r = 0; r < o.repeats; ++r) {
    const auto t0 = Clock::now();
    Tensor b = queue_work();
    queued.push_back(since(t0));
    depth.push_back(static_cast<double>(amlp::queue_stats(d).depth));
    amlp::waitall();
    finished.push_back(since(t0));
  }
  const double q = median(queued), f = median(finished);
  std::printf("  %d × (randn %lld×%lld, matmul), medians of %d:\n", kIters, (long long)n, (long long)n, o.repeats);
  std::printf("  queued after    %12s   (frontend back from the last push)\n", human(q).c_str());
  std::printf("  finished after  %12s   (waitall() returned)   finished/queued = %.0f×\n", human(f).c_str(), f / q);
  std::printf("  queue depth right after queueing: %.0f of %d ops still pending\n", median(depth), 2 * kIters);
  if (d.is_cuda())
    explain({"The loop returned as soon as its kernels were queued; the worker had launched them onto the CUDA",
             "stream, where the GPU was still running them. Only waitall() waited for the work itself:",
             "a timer without a blocker measures queueing, not computing."});
  else
    explain({"The loop returned as soon as its kernels were queued; the worker was still running them.",
             "Only waitall() waited for the work itself: a timer without a blocker measures queueing, not computing."});
}

// --- blockers -------------------------------------------------------------------
// The same pending work each time: a chain of kChain elementwise ops ending in
// s = sum(h), then kTail unrelated ops queued behind it on the same queue.
void run_blockers(const Options& o) {
  const Device d = o.device;
  const int64_t n = size_or(o, 1000, 4096);
  constexpr int kChain = 10, kTail = 10;
  heading("blockers", "wait_to_read vs waitall vs to_host vs item on " + d.str());
  Tensor x = amlp::randn({n, n}, d), u = amlp::randn({n, n}, d);
  auto make_pending = [&] {  // returns s; the tail's ops keep their buffers alive until they ran
    Tensor h = x;
    for (int i = 0; i < kChain; ++i) h = amlp::add_scalar(h, 1.f);
    Tensor s = amlp::sum(h);
    Tensor t = u;
    for (int i = 0; i < kTail; ++i) t = amlp::add_scalar(t, 1.f);
    return s;
  };
  struct Blocker {
    const char* name;
    const char* waits_for;
    std::function<void(const Tensor&)> call;
  };
  const std::vector<Blocker> blockers = {
      {"s.wait_to_read()", "the op that wrote s (the chain); the unrelated ops behind it keep running",
       [](const Tensor& s) { s.wait_to_read(); }},
      {"waitall()", "every op on every queue: the chain and the unrelated ops",
       [](const Tensor&) { amlp::waitall(); }},
      {"s.to_host()", "queues a copy behind everything on s's queue, then waits for that copy",
       [](const Tensor& s) { (void)s.to_host(); }},
      {"s.item()", "to_host() of a one-element tensor: the same wait",
       [](const Tensor& s) { (void)s.item(); }},
  };
  make_pending();
  amlp::waitall();  // warm-up
  std::vector<std::vector<double>> pending(blockers.size()), done(blockers.size());
  for (int r = 0; r < o.repeats; ++r)
    for (size_t b = 0; b < blockers.size(); ++b) {  // interleaved, so drift hits all alike
      Tensor s = make_pending();
      const auto t0 = Clock::now();
      blockers[b].call(s);
      pending[b].push_back(since(t0));
      amlp::waitall();
      for (int k = 0; k < 20; ++k) {  // the same blocker once nothing is pending
        const auto t1 = Clock::now();
        blockers[b].call(s);
        done[b].push_back(since(t1));
      }
    }
  std::printf("  pending work: %d add_scalar on %lld×%lld → s = sum(h), then %d unrelated ops queued behind it\n",
              kChain, (long long)n, (long long)n, kTail);
  std::printf("  %-18s %14s %16s   %s\n", "blocker", "work pending", "nothing pending", "waits for");
  for (size_t b = 0; b < blockers.size(); ++b)
    std::printf("  %-18s %14s %16s   %s\n", blockers[b].name, human(median(pending[b])).c_str(),
                human(median(done[b])).c_str(), blockers[b].waits_for);
  explain({"wait_to_read() waits only for the op that last wrote its tensor, so it returns while later work runs.",
           "waitall() waits for every queue; to_host() and item() queue a copy, and in an in-order queue that copy",
           "runs after everything pushed before it — here they cost what waitall() costs, not what wait_to_read() does."});
}

// A paused queue and synchronous mode (ASYNCMLP_BLOCKING=1) would deadlock: a
// push would wait for an op that cannot run. Synchronous mode is lifted while
// one of these lives.
class AsyncWhilePaused {
 public:
  AsyncWhilePaused() : was_(amlp::blocking()) {
    if (was_) amlp::set_blocking(false);
  }
  ~AsyncWhilePaused() {
    if (was_) amlp::set_blocking(true);
  }
  AsyncWhilePaused(const AsyncWhilePaused&) = delete;
  AsyncWhilePaused& operator=(const AsyncWhilePaused&) = delete;

 private:
  bool was_;
};

// --- sync-vs-async ----------------------------------------------------------------
// y = x + 1, N times, with a barrier each iteration vs one at the end; t1, t2
// and t3 measured separately, then the book's model checked against both.
void run_sync_vs_async(const Options& o) {
  const Device d = o.device;
  const int64_t N = o.ops;
  heading("sync-vs-async", "y = x + 1, " + std::to_string(N) + " times, on " + d.str());
  Tensor x = amlp::ones({1, 2}, d);  // the book's x
  x.wait_to_read();

  // t1, t2: push N ops onto a paused queue (the frontend alone), then let the
  // worker drain them (the backend alone).
  auto paused_run = [&](const std::function<void()>& push_one, double* t1, double* t2) {
    AsyncWhilePaused async_here;
    std::optional<amlp::QueuePause> paused(std::in_place, d);
    const auto t0 = Clock::now();
    for (int64_t i = 0; i < N; ++i) push_one();
    *t1 = since(t0) / double(N);
    const auto tr = Clock::now();
    paused.reset();
    amlp::waitall();
    *t2 = since(tr) / double(N);
  };
  auto push_add = [&] { Tensor y = amlp::add_scalar(x, 1.f); };
  auto synced_loop = [&](int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
      Tensor y = amlp::add_scalar(x, 1.f);
      y.wait_to_read();
    }
  };
  // t3: one barrier's fixed cost, calibrated on a short synced run of the same
  // op (kCalib iterations: push, wake the worker, run, wake the waiter) minus
  // its push and run. Thread wake-ups dominate it, and on a VM their cost
  // moves (~5 µs ↔ ~60 µs) over seconds, so it is calibrated again in each
  // repeat, right around the runs it models.
  constexpr int64_t kCalib = 500;
  auto round_trip = [&] {
    const auto t0 = Clock::now();
    synced_loop(kCalib);
    return since(t0) / double(kCalib);
  };
  auto async_loop = [&](int64_t n) {  // returns how long the pushes took
    const auto t0 = Clock::now();
    for (int64_t i = 0; i < n; ++i) Tensor y = amlp::add_scalar(x, 1.f);
    const double pushed = since(t0);
    amlp::waitall();
    return pushed;
  };

  double t1_r = 0, t2_r = 0;
  paused_run(push_add, &t1_r, &t2_r);  // warm-up: the pool caches N buffers
  synced_loop(std::min<int64_t>(N, 1000));
  async_loop(std::min<int64_t>(N, 1000));
  std::vector<double> v1, v2, v3, rt, synced, async, async_push;
  for (int r = 0; r < o.repeats; ++r) {
    paused_run(push_add, &t1_r, &t2_r);
    const double rt_before = round_trip();
    auto t0 = Clock::now();
    synced_loop(N);
    synced.push_back(since(t0));
    t0 = Clock::now();
    async_push.push_back(async_loop(N));
    async.push_back(since(t0));
    rt.push_back(0.5 * (rt_before + round_trip()));
    v1.push_back(t1_r);
    v2.push_back(t2_r);
    v3.push_back(std::max(0.0, rt.back() - t1_r - t2_r));
  }
  const double t1 = median(v1), t2 = median(v2), t3 = median(v3);
  const double ms = median(synced), ma = median(async);
  const auto t3_range = std::minmax_element(v3.begin(), v3.end());
  const double model_s = double(N) * (t1 + t2 + t3), model_a = t1 + double(N) * t2 + t3;
  auto err = [](double measured, double model) { return 100.0 * (model - measured) / measured; };
  std::printf("  t1 frontend push, per op    %10s   (add_scalar pushed onto a paused queue)\n", human(t1).c_str());
  std::printf("  t2 backend execution, per op%10s   (that backlog drained by the worker)\n", human(t2).c_str());
  std::printf("  t3 one barrier's fixed cost %10s   (a %lld-op synced run: %s per op, minus push and run;\n"
              "                                          over the repeats: %s .. %s)\n",
              human(t3).c_str(), static_cast<long long>(kCalib), human(median(rt)).c_str(), human(*t3_range.first).c_str(),
              human(*t3_range.second).c_str());
  std::printf("  %-34s %11s %11s %8s\n", ("medians of " + std::to_string(o.repeats) + ":").c_str(), "measured", "model",
              "error");
  std::printf("  %-34s %11s %11s %+7.0f%%\n", "barrier each op  N·(t1+t2+t3)", human(ms).c_str(),
              human(model_s).c_str(), err(ms, model_s));
  std::printf("  %-34s %11s %11s %+7.0f%%\n", "one barrier      t1+N·t2+t3", human(ma).c_str(),
              human(model_a).c_str(), err(ma, model_a));
  if (t1 > t2) {
    const double model_f = double(N) * t1 + t2 + t3;
    std::printf("  %-34s %11s %11s %+7.0f%%\n", "one barrier      N·t1+t2+t3", human(ma).c_str(),
                human(model_f).c_str(), err(ma, model_f));
  }
  const double t1_busy = median(async_push) / double(N);
  std::printf("  one barrier at the end is %.1f× faster than one per op; in it the frontend pushed at %s per op\n",
              ms / ma, human(t1_busy).c_str());
  std::vector<std::string> lines = {
      "A barrier per op pays push + run + a sleep/wake round trip (t3) every time; with one barrier",
      "the frontend's pushing overlaps the worker's running, so only the slower of the two counts, N times.",
      t1 > t2 ? "Here t1 > t2: the frontend is the bottleneck, so N·t1 + t2 + t3 is the model that fits (the book assumes t2 ≥ t1)."
              : "Here t2 ≥ t1: the backend is the bottleneck, as the book assumes."};
  if (t1_busy > 1.25 * t1) {
    lines.push_back("The models take t1 and t2 as measured alone; running together, frontend and worker share the queue's");
    lines.push_back("lock and cache lines (and a wake-up per push when the worker catches up), so both cost more: it reads low.");
  }
  explain(lines);
}

// --- cpu-vs-device ----------------------------------------------------------------
void run_cpu_vs_device(const Options& o) {
  const Device d = o.device;
  const int64_t n = size_or(o, 1000, 1000);
  const int N = static_cast<int>(n);
  heading("cpu-vs-device", "matmul " + std::to_string(n) + "×" + std::to_string(n) +
                               ": CBLAS called directly vs through the " + d.str() + " queue");
  std::vector<float> A = amlp::randn({n, n}, Device::cpu(0)).to_host();
  std::vector<float> B = amlp::randn({n, n}, Device::cpu(0)).to_host();
  std::vector<float> C(A.size(), 0.f);  // pre-touched
  Tensor a = amlp::from_host({n, n}, A.data(), d), b = amlp::from_host({n, n}, B.data(), d);
  auto direct = [&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, N, N, 1.f, A.data(), N, B.data(), N, 0.f, C.data(), N);
  };
  auto queued = [&] {
    Tensor c = amlp::matmul(a, b);
    c.wait_to_read();
  };
  for (int w = 0; w < 2; ++w) {  // warm-up
    direct();
    queued();
  }
  std::vector<double> td, tq;
  const int reps = std::max(o.repeats, 5);
  for (int r = 0; r < reps; ++r) {
    auto t0 = Clock::now();
    direct();
    td.push_back(since(t0));
    t0 = Clock::now();
    queued();
    tq.push_back(since(t0));
  }
  const double md = median(td), mq = median(tq), flop = 2.0 * double(n) * double(n) * double(n);
  std::printf("  medians of %d:\n", reps);
  std::printf("  cblas_sgemm on the calling thread      %10s  (%6.1f GFLOP/s)\n", human(md).c_str(), flop / md * 1e-9);
  std::printf("  matmul + wait_to_read() on %-10s  %10s  (%6.1f GFLOP/s)\n", d.str().c_str(), human(mq).c_str(),
              flop / mq * 1e-9);
  std::printf("  queued/direct = %.3f×   difference %s\n", mq / md, human(mq - md).c_str());
  if (d.is_cuda())
    explain({"The same product on the GPU, round trip included: push, launch, run on the stream, wait.",
             "The ratio is the GPU's speedup over this CPU's OpenBLAS for one synchronized matmul."});
  else
    explain({"Both run the same OpenBLAS kernel; the difference is the queue's price: allocate the output from",
             "the pool, push, wake the worker and wake the waiting frontend — a few µs, noise beside the GEMM."});
}

// --- devices -------------------------------------------------------------------------
// Independent work on two devices, in sequence vs in parallel. The work is an
// in-place elementwise update (w -= lr·g, the SGD kernel: one thread, no
// allocation), calibrated so each device is busy about as long as the other.
void run_devices(const Options& o) {
  const Device first = o.device;
  const Device second = first.is_cuda() ? Device::cpu(0) : Device::cpu(first.index == 1 ? 0 : 1);
  const Device devs[2] = {first, second};
  heading("devices", "independent work on " + first.str() + " and " + second.str() + ", in sequence vs in parallel");
  struct Work {
    Tensor w, g, none;
    int64_t ops = 0;
  };
  Work work[2];
  for (int i = 0; i < 2; ++i) {
    const int64_t n = devs[i].is_cuda() ? (o.size ? o.size * o.size : 16 << 20) : (o.size ? o.size * o.size : 128 << 10);
    work[i].w = amlp::randn({n}, devs[i]);
    work[i].g = amlp::randn({n}, devs[i]);
  }
  auto push = [&](int i, int64_t ops) {
    for (int64_t k = 0; k < ops; ++k) amlp::sgd_update_(work[i].w, work[i].g, work[i].none, 1e-6f, 0.f, 0.f, 1.f);
  };
  // Calibrate: ops per device for ~kTarget seconds of work each.
  constexpr double kTarget = 0.15;
  for (int i = 0; i < 2; ++i) {
    push(i, 20);
    amlp::waitall();
    int64_t probe = 50;
    double t = 0;
    for (;;) {
      const auto t0 = Clock::now();
      push(i, probe);
      amlp::waitall();
      t = since(t0);
      if (t > 0.05 || probe > (1 << 20)) break;
      probe *= 4;
    }
    work[i].ops = std::max<int64_t>(10, static_cast<int64_t>(kTarget / (t / double(probe))));
  }
  std::vector<double> alone[2], seq, par;
  const int reps = std::max(o.repeats, 5);
  for (int r = 0; r < reps; ++r) {
    double each[2];
    for (int i = 0; i < 2; ++i) {
      const auto t0 = Clock::now();
      push(i, work[i].ops);
      amlp::waitall();
      each[i] = since(t0);
      alone[i].push_back(each[i]);
    }
    seq.push_back(each[0] + each[1]);
    const auto t0 = Clock::now();
    push(0, work[0].ops);
    push(1, work[1].ops);
    amlp::waitall();
    par.push_back(since(t0));
  }
  const double a0 = median(alone[0]), a1 = median(alone[1]), s = median(seq), p = median(par);
  std::printf("  work: w -= lr·g in place on %lld floats (%s, %lld ops) and %lld floats (%s, %lld ops); medians of %d\n",
              (long long)work[0].w.numel(), first.str().c_str(), (long long)work[0].ops,
              (long long)work[1].w.numel(), second.str().c_str(), (long long)work[1].ops, reps);
  std::printf("  %-7s alone %10s   %-7s alone %10s\n", first.str().c_str(), human(a0).c_str(), second.str().c_str(),
              human(a1).c_str());
  std::printf("  in sequence (one, wait, the other)  %10s\n", human(s).c_str());
  std::printf("  in parallel (both queued, waitall)  %10s   speedup %.2f× (perfect overlap: %.2f×)\n", human(p).c_str(),
              s / p, s / std::max(a0, a1));
  if (first.is_cuda())
    explain({"The GPU's queue and the CPU's queue each have their own worker, so the frontend queues both and they",
             "run at once: the parallel time approaches the slower device's alone."});
  else
    explain({"cpu:0 and cpu:1 each have their own queue and worker thread, so both workloads run at once; the",
             "parallel time approaches the slower device's alone. With 2 cores shared by the frontend, both workers and",
             "whatever else runs on the machine, the speedup moves with the load (each is a median; rerun to compare).",
             "(A GEMM would not show it here: OpenBLAS already spreads one GEMM over both cores.)"});
}

// --- command line ----------------------------------------------------------------------

const std::vector<std::pair<std::string, void (*)(const Options&)>>& subcommands() {
  static const std::vector<std::pair<std::string, void (*)(const Options&)>> s = {
      {"queued", run_queued},
      {"blockers", run_blockers},
      {"sync-vs-async", run_sync_vs_async},
      {"cpu-vs-device", run_cpu_vs_device},
      {"devices", run_devices},
  };
  return s;
}

void usage(std::ostream& os, const po::options_description& opts) {
  os << "usage: async_demo <subcommand> [options]\n\n"
        "The microbenchmarks of d2l's \"Asynchronous Computation\" chapter.\n\n"
        "subcommands:\n"
        "  queued         10 × (randn, matmul) queued: time to queue vs time to finish, queue depth\n"
        "  blockers       wait_to_read vs waitall vs to_host vs item on the same pending work\n"
        "  sync-vs-async  y = x + 1, N times, a barrier each op vs one at the end; the t1 + N·t2 + t3 model\n"
        "  cpu-vs-device  matmul through CBLAS directly vs through the device's queue\n"
        "  devices        independent work on two devices in sequence vs in parallel\n"
        "                 (cpu:0 + cpu:1, or cuda:N + cpu:0 when the device is a GPU)\n"
        "  all            every subcommand in turn\n\n"
     << opts;
}

Options parse(int argc, char** argv, bool* help) {
  std::string device = "auto";
  Options o;
  po::options_description opts("options");
  opts.add_options()
      ("help,h", "print this help and exit")
      ("device", po::value<std::string>(&device)->default_value("auto"), "auto | cpu | cpu:N | cuda | cuda:N")
      ("size", po::value<int64_t>(&o.size)->default_value(0),
       "matrix side n (0: each subcommand's default, scaled to the device: queued and blockers 1000 on a CPU, "
       "4096 on a GPU; cpu-vs-device 1000; devices works on n² floats per device)")
      ("repeats", po::value<int>(&o.repeats)->default_value(5), "timed repeats per measurement (medians are reported)")
      ("ops", po::value<int64_t>(&o.ops)->default_value(10000), "N for sync-vs-async");
  po::options_description hidden;
  hidden.add_options()("subcommand", po::value<std::string>(&o.command));
  po::options_description all;
  all.add(opts).add(hidden);
  po::positional_options_description pos;
  pos.add("subcommand", 1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(all).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw UsageError(e.what());
  }
  if (vm.count("help")) {
    *help = true;
    usage(std::cout, opts);
    return o;
  }
  if (o.command.empty()) throw UsageError("no subcommand (try --help)");
  bool known = o.command == "all";
  for (const auto& s : subcommands()) known = known || s.first == o.command;
  if (!known) throw UsageError("unknown subcommand '" + o.command + "' (try --help)");
  if (o.size < 0 || o.size > 16384) throw UsageError("--size must be 0 (auto) or 1..16384, got " + std::to_string(o.size));
  if (o.repeats < 1 || o.repeats > 1000) throw UsageError("--repeats must be 1..1000, got " + std::to_string(o.repeats));
  if (o.ops < 1 || o.ops > 1000000) throw UsageError("--ops must be 1..1000000, got " + std::to_string(o.ops));
  try {
    o.device = amlp::parse_device(device, &o.fell_back);
  } catch (const amlp::DeviceError& e) {
    throw UsageError(e.what());
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  try {
    bool help = false;
    o = parse(argc, argv, &help);
    if (help) return 0;
  } catch (const UsageError& e) {
    std::fprintf(stderr, "async_demo: %s\n", e.what());
    return 2;
  }
  try {
    std::printf("async_demo on %s%s; %s\n", o.device.str().c_str(),
                o.fell_back ? " (--device auto: no GPU visible)" : "", machine_load().c_str());
    if (amlp::blocking())
      std::printf("synchronous mode is on (ASYNCMLP_BLOCKING): every push waits for its op, so nothing runs ahead\n");
    for (const auto& s : subcommands())
      if (o.command == "all" || o.command == s.first) s.second(o);
    amlp::waitall();
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "async_demo: %s\n", e.what());
    return 1;
  }
  return 0;
}
