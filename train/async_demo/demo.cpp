// demo.cpp — the bodies of demo.h: option parsing, timing and output helpers.
#include "train/async_demo/demo.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "framework/parse.h"
#include "train/options/program_options.h"

namespace po = boost::program_options;

namespace amlp::demo {

namespace {

void usage(std::ostream& os, const po::options_description& opts, const std::vector<Subcommand>& subcommands) {
  os << "usage: async_demo <subcommand> [options]\n\n"
        "The microbenchmarks of d2l's \"Asynchronous Computation\" chapter.\n\n"
        "subcommands:\n";
  for (const Subcommand& s : subcommands) os << "  " << pad(s.name, -14) << " " << s.summary << "\n";
  os << "  " << pad("all", -14) << " every subcommand in turn\n\n" << opts;
}

}  // namespace

Options parse_options(int argc, char** argv, const std::vector<Subcommand>& subcommands, bool* help) {
  // train_mlp's path (train/options/program_options.h): each number read by
  // framework/parse.h's parse_int as Boost stores it, a bad one named by its
  // option in one line.
  Options o;
  po::options_description opts("options");
  opts.add_options()("help,h", "print this help and exit");
  train::Declare(opts)
      .text("device", "DEV", "auto", "auto | cpu | cpu:N | cuda | cuda:N")
      .option<int64_t>("size", "N", "0", train::int_in<int64_t>(0, 16384),
       "matrix side n in [0, 16384] (0: each subcommand's default, scaled to the device: queued and blockers 1000 on "
       "a CPU, 4096 on a GPU; cpu-vs-device 1000; devices works on n² floats per device)")
      .option<int64_t>("repeats", "N", "",
       [](const std::string& t) { return t.empty() ? int64_t(0) : parse_int(t, "", 1, 1000); },
       "timed repeats per measurement, in [1, 1000] (medians are reported; without it 5, data-parallel's rounds 7)")
      .option<int64_t>("ops", "N", "10000", train::int_in<int64_t>(1, 1000000), "N for sync-vs-async, in [1, 1000000]");
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
  } catch (const train::BadValue& e) {
    throw UsageError("--" + e.key + e.problem);
  } catch (const po::error& e) {
    throw UsageError(e.what());
  }
  if (vm.count("help")) {
    *help = true;
    usage(std::cout, opts, subcommands);
    return o;
  }
  if (o.command.empty()) throw UsageError("no subcommand (try --help)");
  bool known = o.command == "all";
  for (const Subcommand& s : subcommands) known = known || o.command == s.name;
  if (!known) throw UsageError("unknown subcommand '" + o.command + "' (try --help)");
  o.size = vm["size"].as<int64_t>();
  o.repeats = static_cast<int>(vm["repeats"].as<int64_t>());
  o.ops = vm["ops"].as<int64_t>();
  const std::string device = vm["device"].as<std::string>();
  try {
    o.device = parse_device(device, &o.fell_back);
  } catch (const DeviceError& e) {
    throw UsageError(e.what());
  }
  return o;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

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

std::string pad(const std::string& s, int width) {
  int shown = 0;
  for (unsigned char c : s) shown += (c & 0xC0) != 0x80;  // not a UTF-8 continuation byte
  const int fill = std::abs(width) - shown;
  if (fill <= 0) return s;
  return width > 0 ? std::string(fill, ' ') + s : s + std::string(fill, ' ');
}

std::string human(double seconds, int width) {
  char buf[32];
  const double a = std::fabs(seconds);
  if (a >= 1.0) std::snprintf(buf, sizeof buf, "%.3f s", seconds);
  else if (a >= 1e-3) std::snprintf(buf, sizeof buf, "%.2f ms", seconds * 1e3);
  else std::snprintf(buf, sizeof buf, "%.2f µs", seconds * 1e6);
  return pad(buf, width);
}

void heading(const std::string& name, const std::string& what) {
  std::printf("\n== %s: %s ==\n", name.c_str(), what.c_str());
}

void row(const std::vector<Cell>& cells) {
  std::string line = " ";
  for (const Cell& c : cells) line += " " + pad(c.text, c.width);
  std::printf("%s\n", line.c_str());
}

void explain(const std::vector<std::string>& lines) {
  for (const std::string& l : lines) std::printf("   > %s\n", l.c_str());
  std::fflush(stdout);
}

}  // namespace amlp::demo
