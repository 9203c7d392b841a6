// main.cpp — async_demo: the "Asynchronous Computation" chapter's
// microbenchmarks, one subcommand (and one file) each; demo.h has what they
// share. Bad input (an option, a value, a library environment variable) is
// one line on stderr and exit 2; a failure while running, one line and exit 1.
//
//   async_demo all                                   # everything, --device auto
//   async_demo sync-vs-async --ops 20000 --repeats 3
//   async_demo cpu-vs-device --device cpu --size 2000
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <vector>

#include "train/async_demo/demo.h"

using namespace amlp::demo;

// In the order `all` runs them.
static const std::vector<Subcommand> kSubcommands = {
    {"queued", "10 × (randn, matmul) queued: time to queue vs time to finish, queue depth", run_queued},
    {"blockers", "wait_to_read vs waitall vs to_host vs item on the same pending work", run_blockers},
    {"sync-vs-async", "y = x + 1, N times, a barrier each op vs one at the end; the t1 + N·t2 + t3 model",
     run_sync_vs_async},
    {"cpu-vs-device", "matmul through CBLAS directly vs through the device's queue", run_cpu_vs_device},
    {"devices",
     "independent work on two devices in sequence vs in parallel\n"
     "                 (cpu:0 + cpu:1, or cuda:N + cpu:0 when the device is a GPU)",
     run_devices},
    {"data-parallel",
     "the d2l MLP on one device vs one replica per device (cpu:0 + cpu:1, or two GPUs),\n"
     "                 the same global batch; speed-up and each device's memory",
     run_data_parallel},
};

// 0 while stdout took every write so far, else the error of the write that
// failed (EPIPE: its reader is gone; EFBIG: a file past `ulimit -f`).
static int stdout_error() {
  static int err = 0;
  if (!err && (std::fflush(stdout) != 0 || std::ferror(stdout))) err = errno ? errno : EIO;
  return err;
}

// The room for tensors the limit a refusal at load suggests leaves
// (framework/runtime.h): `all` and `data-parallel` train the d2l MLP on two
// CPU devices, each with its pools, stacks and GEMM buffer (data-parallel
// alone needs 969 MiB of address space at two OpenBLAS threads, `all` 1125
// MiB); the rest hold a few n x n matrices (n = --size, 1000 by default on a
// CPU): 8 of them is more than any keeps (`all` grows by 7 from n = 1000 to
// 3000). Reads argv only: it runs before any initialiser.
extern "C" size_t amlp_tensor_room_at_load(int argc, char** argv) {
  // The rest of `a` past `prefix`, or null when `a` does not begin with it.
  const auto after = [](const char* a, const char* prefix) -> const char* {
    while (*prefix && *a == *prefix) ++a, ++prefix;
    return *prefix ? nullptr : a;
  };
  const auto is = [&](const char* a, const char* word) {
    const char* rest = after(a, word);
    return rest && !*rest;
  };
  const auto digits = [](const char* s) {
    size_t n = 0;
    for (; *s >= '0' && *s <= '9' && n < 100000; ++s) n = n * 10 + size_t(*s - '0');
    return n;
  };
  bool two_devices = false;
  size_t n = 0;
  for (int i = 1; i < argc && argv[i]; ++i) {
    const char* a = argv[i];
    if (is(a, "all") || is(a, "data-parallel")) two_devices = true;
    if (is(a, "--size") && i + 1 < argc && argv[i + 1]) n = digits(argv[i + 1]);
    if (const char* value = after(a, "--size=")) n = digits(value);
  }
  if (n == 0) n = 1000;
  return (two_devices ? size_t(560) << 20 : size_t(16) << 20) + 8 * n * n * sizeof(float);
}

int main(int argc, char** argv) {
  // A closed pipe or a file past `ulimit -f` is a failed write, reported in
  // one line (exit 1), not a silent death by SIGPIPE or SIGXFSZ.
  std::signal(SIGPIPE, SIG_IGN);
  std::signal(SIGXFSZ, SIG_IGN);
  amlp::set_memory_limit_knob("");  // no option sets the pools' limit: out-of-memory advice names none
  Options o;
  try {
    bool help = false;
    o = parse_options(argc, argv, kSubcommands, &help);
    if (help) return 0;
    amlp::check_environment();  // ASYNCMLP_BLOCKING=yes and the like: bad input, before anything runs
  } catch (const UsageError& e) {
    std::fprintf(stderr, "async_demo: %s\n", e.what());
    return 2;
  } catch (const amlp::EnvError& e) {
    std::fprintf(stderr, "async_demo: %s\n", e.what());
    return 2;
  }
  try {
    std::printf("async_demo on %s%s; %s\n", o.device.str().c_str(),
                o.fell_back ? " (--device auto: no GPU visible)" : "", machine_load().c_str());
    if (amlp::blocking())
      std::printf("synchronous mode is on (ASYNCMLP_BLOCKING): every push waits for its op, so nothing runs ahead\n");
    for (const Subcommand& s : kSubcommands)
      if ((o.command == "all" || o.command == s.name) && !stdout_error()) s.run(o);  // no one reads: stop
    amlp::waitall();
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "async_demo: %s\n", e.what());
    return 1;
  }
  if (const int err = stdout_error()) {
    std::fprintf(stderr, "async_demo: cannot write to stdout: %s\n", std::strerror(err));
    return 1;
  }
  return 0;
}
