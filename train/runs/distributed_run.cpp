#include "train/runs/distributed_run.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "framework/asyncmlp.h"
#include "framework/json.h"
#include "framework/parse.h"
#include "framework/write_file.h"

namespace amlp::train {

dist::ProcessGroup* rank_group(const Options& s) {
  if (!s.distributed) return nullptr;
  dist::ProcessGroup* g = dist::ProcessGroup::current();
  return g && g->distributed() ? g : nullptr;
}

Options join_ranks(const Options& o) {
  if (!o.distributed) return o;
  dist::ProcessGroup& g = dist::ProcessGroup::init();
  g.set_program_name("train_mlp");
  g.check_same("options", o.settings);  // every option, as parsed (options.h)
  Options mine = o;
  if (!g.distributed()) return mine;  // one rank: as without --distributed
  if (mine.device.is_cuda() && (o.device_text == "cuda" || o.device_text == "auto"))
    mine.device = Device::cuda(g.local_rank());  // one GPU per rank
  if (!mine.memory_log.empty()) mine.memory_log = dist::rank_path(mine.memory_log, g.rank());
  if (g.rank() != 0) mine.quiet = true;  // rank 0's status line speaks for the run
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  set_blas_threads(std::max(1, cores / std::max(1, g.local_size())));
  return mine;
}

int64_t rank0_value(dist::ProcessGroup& g, int64_t v) {
  std::vector<char> bytes(sizeof v);
  std::memcpy(bytes.data(), &v, sizeof v);
  g.broadcast(bytes, 0);
  std::memcpy(&v, bytes.data(), sizeof v);
  return v;
}

bool any_rank(dist::ProcessGroup& g, bool v) {
  bool any = false;
  for (const std::vector<double>& row : g.gather({v ? 1.0 : 0.0})) any = any || row[0] != 0;
  return rank0_value(g, any) != 0;
}

int64_t local_batch_rows(const Options& s) {
  const dist::ProcessGroup* g = rank_group(s);
  if (!g) return s.batch_size;
  return s.batch_size / g->size() + (g->rank() < s.batch_size % g->size() ? 1 : 0);
}

// clang-format off
const std::vector<GatheredRankFigure> kGatheredRankFigures = {
  {"samples_per_s", [](const RunResult& r) { return r.measured.samples_per_s; }, [](RankResult& k, double v) { k.samples_per_s = v; }},
  {"wall_s", [](const RunResult& r) { return r.measured.wall_s; }, [](RankResult& k, double v) { k.wall_s = v; }},
  {"mem_increase_bytes", [](const RunResult& r) { return double(r.measured.mem_increase_bytes); }, [](RankResult& k, double v) { k.mem_increase_bytes = static_cast<size_t>(v); }},
  {"predicted_increase_bytes", [](const RunResult& r) { return double(r.predicted.increase_bytes); }, [](RankResult& k, double v) { k.predicted_increase_bytes = static_cast<size_t>(v); }},
  {"host_s_per_batch", [](const RunResult& r) { return r.measured.host_s_per_batch; }, [](RankResult& k, double v) { k.host_s_per_batch = v; }},
  {"device_s_per_batch", [](const RunResult& r) { return r.measured.device_s_per_batch; }, [](RankResult& k, double v) { k.device_s_per_batch = v; }},
};
// clang-format on

const std::vector<GatheredRankFigure>& gathered_rank_figures() { return kGatheredRankFigures; }

std::vector<double> rank_figures_row(const RunResult& r) {
  std::vector<double> row;
  for (const GatheredRankFigure& f : kGatheredRankFigures) row.push_back(f.read(r));
  return row;
}

RankResult rank_result_of(int rank, const std::vector<double>& row) {
  if (row.size() != kGatheredRankFigures.size())
    throw Error("rank " + std::to_string(rank) + " sent " + std::to_string(row.size()) + " figures, not " +
                std::to_string(kGatheredRankFigures.size()));
  RankResult k;
  k.rank = rank;
  for (size_t i = 0; i < row.size(); ++i) kGatheredRankFigures[i].write(k, row[i]);
  return k;
}

void gather_rank_figures(std::vector<RunResult>& results) {
  if (results.empty()) return;
  dist::ProcessGroup* g = rank_group(results.front().asked.options);
  if (!g) return;
  for (RunResult& r : results) {
    const std::vector<std::vector<double>> rows = g->gather(rank_figures_row(r));
    r.measured.ranks.clear();
    for (size_t i = 0; i < rows.size(); ++i) r.measured.ranks.push_back(rank_result_of(static_cast<int>(i), rows[i]));
  }
}

void merge_rank_traces(const std::string& path, int ranks) {
  Json merged = {{"displayTimeUnit", "ms"}, {"traceEvents", Json::array()}};
  double origin0 = 0;
  for (int r = 0; r < ranks; ++r) {
    const std::string part = dist::rank_path(path, r);
    std::ifstream in(part);
    if (!in) throw Error("cannot read rank " + std::to_string(r) + "'s trace '" + part + "'");
    std::stringstream text;
    text << in.rdbuf();
    const Json t = Json::parse(text.str());
    // Each rank's clock counts from its own start: shifted onto rank 0's.
    double origin = 0;
    if (t.contains("otherData") && t["otherData"].contains("steady_origin_us"))
      origin = std::stod(t["otherData"]["steady_origin_us"].get<std::string>());
    if (r == 0) {
      origin0 = origin;
      if (t.contains("otherData")) merged["otherData"] = t["otherData"];
    }
    const double shift = origin - origin0;
    for (Json e : t["traceEvents"]) {
      e["pid"] = r;
      if (e.value("name", "") == "process_name") e["args"]["name"] = "rank " + std::to_string(r);
      if (e.contains("ts")) e["ts"] = std::max(0.0, e["ts"].get<double>() + shift);
      merged["traceEvents"].push_back(std::move(e));
    }
    in.close();
    std::remove(part.c_str());
  }
  write_file(path, merged.dump() + "\n");
}

}  // namespace amlp::train
