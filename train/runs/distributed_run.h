// distributed_run.h — train_mlp across processes (--distributed mpi,
// docs/design.md §9): one rank per process under mpirun, one replica on each rank's device,
// each global batch split across the ranks (framework/nn/dist_data_parallel.h).
// What the driver does around the runs: joining the ranks (the options
// checked alike, the device and BLAS threads chosen per rank), the decisions
// every rank must take alike, each rank's figures gathered on rank 0 and the
// ranks' traces merged into one.
//
//   Options mine = join_ranks(options);    // collective; DistError: bad input (exit 2)
//   ... run the plan; a failure: one line, then group.abort_all(line, 1) ...
//   gather_rank_figures(results);          // rank 0's results gain every rank's figures
//   merge_rank_traces(options.trace);      // rank 0: trace.rank<R>.json -> trace.json
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "framework/process_group.h"
#include "train/options/options.h"
#include "train/plan/run_result.h"

namespace amlp::train {

// The group of a distributed run with more than one rank, else null.
dist::ProcessGroup* rank_group(const Options& s);

// Collective: starts the process group, refuses ranks whose options differ
// (DistError: rank 0 prints the line), and returns this rank's options: its
// device (cuda: cuda:<local rank>), its memory log (FILE.rank<R>.csv) and
// BLAS threads the host's cores / the ranks on this host (at least 1).
Options join_ranks(const Options& o);

// Collective: rank 0's value on every rank (a decision every rank must take alike).
int64_t rank0_value(dist::ProcessGroup& g, int64_t v);
// Collective: whether any rank passes true.
bool any_rank(dist::ProcessGroup& g, bool v);

// This rank's rows of a global batch (the batch itself outside a distributed run).
int64_t local_batch_rows(const Options& s);

// The figures each rank sends rank 0 (RankResult's, but its rank), declared
// once: the name of each (its key in the summary's rank objects,
// report/run_figures.cpp), how a rank reads it from its run and where rank 0
// puts it. The gather sends them in this order, one double each, and
// unpacks them by this list.
struct GatheredRankFigure {
  const char* name;
  double (*read)(const RunResult&);      // this rank's value
  void (*write)(RankResult&, double);    // into rank 0's record of the rank
};
const std::vector<GatheredRankFigure>& gathered_rank_figures();

// One rank's figures as the gather sends them (the list's order) and back.
std::vector<double> rank_figures_row(const RunResult& r);
RankResult rank_result_of(int rank, const std::vector<double>& row);

// Collective: each run's per-rank figures (RankResult) gathered into rank 0's results.
void gather_rank_figures(std::vector<RunResult>& results);

// Rank 0, after every rank wrote rank_path(path, R): one trace in which each
// rank is a process (pid = rank, named "rank R"); the ranks' files are removed.
void merge_rank_traces(const std::string& path, int ranks);

}  // namespace amlp::train
