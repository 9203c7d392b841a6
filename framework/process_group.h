// process_group.h — the ranks of a run across processes (docs/design.md §9): one rank
// per process under `mpirun`, MPI between them. A train-facing handle: who am
// I (rank, size, rank on this host), the collectives a driver needs before
// and after its loop (broadcast, an options check, a gather of figures), and
// a failure that ends every rank. The gradients themselves are reduced by
// queued ops (all_reduce_sum(x, group), framework/distributed.h), never here.
//
//   ProcessGroup& g = ProcessGroup::init();          // MPI_Init_thread under mpirun, else one rank
//   g.check_same("options", options_text);           // refuses mismatched ranks, on every rank
//   ... train; a failure: print one line, then g.abort_all(what, 1) ...
//   if (g.agree_to_stop(interrupted)) break;          // each batch: every rank stops after the same one
//   std::vector<std::vector<double>> f = g.gather({samples_per_s});   // rows on rank 0 only
//   g.finalize();                                     // waits for the queues, then ends MPI
//
// Without a launcher in the environment (no OMPI_COMM_WORLD_SIZE, PMI_SIZE
// or PMIX_RANK) the group is this process alone: rank 0 of 1, no MPI call.
// A build without MPI has the same API; init() throws DistError there.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "framework/error.h"

namespace amlp::dist {

// A distributed run that cannot start or go on as asked: no MPI in this
// build, an MPI without MPI_THREAD_MULTIPLE, ranks with different options.
// One line; bad input (a driver exits 2).
struct DistError : Error {
  using Error::Error;
};

// Whether this build has MPI (CMake option ASYNCMLP_MPI).
bool built_with_mpi();
// Whether a launcher (mpirun, srun, hydra) started this process as one rank of several.
bool launched_by_mpirun();

class ProcessGroup {
 public:
  // The process's group, made on the first call: under a launcher
  // MPI_Init_thread asking MPI_THREAD_MULTIPLE (the queues' workers call MPI)
  // and checking what it got, the ranks on this host found with
  // MPI_Comm_split_type, and a watcher that ends this rank when another
  // fails (abort_all). Without a launcher, one rank and no MPI. Throws
  // DistError (one line) in a build without MPI, or when MPI falls short.
  static ProcessGroup& init();
  static ProcessGroup* current();  // null before init()

  int rank() const { return rank_; }
  int size() const { return size_; }
  int local_rank() const { return local_rank_; }  // among the ranks on this host
  int local_size() const { return local_size_; }
  bool distributed() const { return size_ > 1; }
  std::string name() const;  // "rank 1 of 2"
  // A prefix for the lines the group prints itself ("train_mlp: error: ..."):
  // the survivors' line when another rank fails.
  void set_program_name(const std::string& name);

  // Collective. Every rank passes a text describing what must agree (the
  // options, one "key=value" a line); when any rank's differs from rank 0's,
  // every rank throws DistError naming the first such rank and its first
  // differing line: "rank 1's options differ from rank 0's: 'batch=32' vs 'batch=64'".
  void check_same(const std::string& what, const std::string& text);
  // Collective: rank `root`'s values into every rank's (the sizes must match).
  void broadcast(std::vector<float>& values, int root = 0);
  void broadcast(std::vector<char>& bytes, int root = 0);
  // Collective: each rank's figures (the same count on every rank) to rank 0,
  // one row per rank in rank order; the other ranks get an empty list.
  std::vector<std::vector<double>> gather(const std::vector<double>& figures);
  void barrier();  // collective

  // Collective, once per batch on every rank: whether every rank stops after
  // this batch (an interrupt, docs/design.md §8, must end every rank at the same
  // batch, or one waits forever for the others' reductions). Each call posts
  // this rank's `stop` as a non-blocking vote and returns the outcome of the
  // vote posted `lag` calls before (false for the first `lag` calls): a
  // `stop` at batch k on any rank stops every rank after batch k + lag. The
  // frontends stay within `lag` batches of each other; nothing waits for a
  // device. Every rank passes the same lag.
  bool agree_to_stop(bool stop, int lag = 4);
  // This rank failed (its own line is printed already): every other rank
  // prints one line naming this rank and `error`, then exits 1, within
  // seconds; this rank exits `exit_code`. Each survivor's watcher thread acts
  // on its own, so a rank blocked in a reduction or a blocker stops too. When
  // a survivor does not answer within 10 s, MPI_Abort ends the job. One rank
  // alone: std::exit(exit_code).
  [[noreturn]] void abort_all(const std::string& error, int exit_code = 1);
  // Collective, once: waits for every queue (waitall(); an error it rethrows
  // leaves the group up, so abort_all() still reaches the others), then for
  // the votes in flight, stops the watcher and ends MPI.
  void finalize();

  // --- the engine's side (framework/ops) --------------------------------------------
  // y = the sum of x over every rank, for n floats: a non-blocking
  // MPI_Iallreduce on the group's reduction communicator, completed when MPI
  // says so (polled, so the calling thread keeps MPI progressing). Called by
  // one queue's worker at a time, in the same order on every rank.
  void all_reduce_sum(const float* x, float* y, size_t n);
  // For measurements (exposed communication): while on, every all_reduce_sum
  // above is recorded: its bytes, when it started (its input ready, MPI
  // called) and when MPI completed it, in steady_clock seconds.
  struct Reduction {
    size_t bytes = 0;
    double start_s = 0, end_s = 0;
  };
  void record_reductions(bool on);
  std::vector<Reduction> take_reductions();  // oldest first; clears the record
  // An NCCL communicator (ncclComm_t) over every rank, for this rank's GPU
  // `gpu`: rank 0's ncclGetUniqueId broadcast over MPI, ncclCommInitRank.
  // Collective on first use. Throws DistError in a build without NCCL.
  void* nccl_comm(int gpu);

  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;
  ~ProcessGroup();

  struct Impl;  // MPI's handles (process_group.cpp)

 private:
  ProcessGroup();
  std::unique_ptr<Impl> impl_;
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1;
};

// "dir/run.csv" → "dir/run.rank1.csv" (the suffix before the last extension;
// "run" → "run.rank1"): one file per rank.
std::string rank_path(const std::string& path, int rank);
// FNV-1a of a text (what check_same compares before it compares lines).
uint64_t text_hash(const std::string& text);

}  // namespace amlp::dist
