// demo.cpp — the bodies of demo.h: option parsing, timing and output helpers.
#include "train/async_demo/demo.h"

#include <algorithm>
#include <boost/program_options.hpp>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "framework/parse.h"

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
  // The numbers are read as text, then by framework/parse.h's parse_int, as
  // train_mlp reads its own (boost::lexical_cast would take "+5").
  std::string device = "auto", size = "0", repeats, ops = "10000";
  Options o;
  po::options_description opts("options");
  opts.add_options()
      ("help,h", "print this help and exit")
      ("device", po::value<std::string>(&device)->default_value("auto"), "auto | cpu | cpu:N | cuda | cuda:N")
      ("size", po::value<std::string>(&size)->default_value("0")->value_name("N"),
       "matrix side n in [0, 16384] (0: each subcommand's default, scaled to the device: queued and blockers 1000 on "
       "a CPU, 4096 on a GPU; cpu-vs-device 1000; devices works on n² floats per device)")
      ("repeats", po::value<std::string>(&repeats)->value_name("N"),
       "timed repeats per measurement, in [1, 1000] (medians are reported; without it 5, data-parallel's rounds 7)")
      ("ops", po::value<std::string>(&ops)->default_value("10000")->value_name("N"), "N for sync-vs-async, in [1, 1000000]");
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
    usage(std::cout, opts, subcommands);
    return o;
  }
  if (o.command.empty()) throw UsageError("no subcommand (try --help)");
  bool known = o.command == "all";
  for (const Subcommand& s : subcommands) known = known || o.command == s.name;
  if (!known) throw UsageError("unknown subcommand '" + o.command + "' (try --help)");
  try {
    o.size = parse_int(size, "--size", 0, 16384);
    if (vm.count("repeats")) o.repeats = static_cast<int>(parse_int(repeats, "--repeats", 1, 1000));
    o.ops = parse_int(ops, "--ops", 1, 1000000);
  } catch (const ParseError& e) {
    throw UsageError(e.what());
  }
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
