// mpi_impl.h — what ProcessGroup keeps of MPI (internal to framework/dist;
// builds with MPI only: ASYNCMLP_WITH_MPI).
//
// Three communicators duplicated from MPI_COMM_WORLD, so that traffic of one
// kind never matches another's: `coll` for the frontend's collectives
// (broadcast, check_same, gather, barrier), `reduce` for the queued
// all-reduces (one queue's worker issues them, in queue order, which is the
// same on every rank), `fail` for the failure messages and their answers,
// `vote` for agree_to_stop().
#pragma once
#include <mpi.h>

#include <atomic>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "framework/process_group.h"

namespace amlp::dist {

struct ProcessGroup::Impl {
  bool mpi = false;  // MPI_Init_thread was called (a launcher started us)
  MPI_Comm coll = MPI_COMM_NULL, reduce = MPI_COMM_NULL, fail = MPI_COMM_NULL, vote = MPI_COMM_NULL;
  // agree_to_stop(): the votes in flight, oldest first (this rank's flag and the outcome).
  struct Vote {
    MPI_Request request;
    std::unique_ptr<int[]> flags;  // [mine, everyone's max]: MPI writes the second until it completes
  };
  std::deque<Vote> votes;
  std::string program = "asyncmlp";
  // The watcher: an MPI_Irecv on `fail` from any rank, tested every few ms.
  std::thread watcher;
  std::atomic<bool> stop{false};
  std::atomic<bool> aborting{false};  // this rank is in abort_all()
  std::mutex nccl_mu;
  std::map<int, void*> nccl;  // GPU -> ncclComm_t

  void start_watcher(int rank, int size);
  void stop_watcher();
};

namespace mpi {

constexpr int kFailTag = 1, kAckTag = 2;
constexpr int kMaxMessage = 4096;  // bytes of a failure message sent (longer ones are cut)

// Throws Error naming the call and MPI's error string unless rc is MPI_SUCCESS.
void check(int rc, const char* call);
// Waits for `r` by testing it: `spins` tests with a yield between them, then
// a test every `sleep_us` µs. Never blocks inside MPI, whose blocking waits
// spin a core: on a shared host the other ranks need it.
void wait(MPI_Request* r, int spins, int sleep_us);
// The frontend's wait (collectives outside the training loop).
inline void wait_frontend(MPI_Request* r) { wait(r, 64, 200); }

}  // namespace mpi

// NCCL over MPI (nccl_bootstrap.cpp, builds with NCCL): a communicator for
// `gpu` across every rank of `g`, collective.
void* make_nccl_comm(ProcessGroup& g, int gpu);

}  // namespace amlp::dist

#define AMLP_MPI_CHECK(call) ::amlp::dist::mpi::check((call), #call)
