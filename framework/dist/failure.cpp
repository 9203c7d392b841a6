// failure.cpp — a failed rank ends every rank (docs/design.md §9), and the MPI
// helpers the group waits with (mpi_impl.h). Builds with MPI only.
//
// Each rank keeps an MPI_Irecv open on the `fail` communicator from any
// rank, tested every 2 ms by a watcher thread of its own. abort_all() sends
// the failure to every other rank and waits (10 s at most) for each to
// answer; a survivor's watcher prints one line naming the failed rank and
// its error, answers, and ends its process at once (_Exit: its queues may be
// blocked in a reduction that will never complete). A rank killed outright
// (SIGKILL) sends nothing: mpirun sees it die and ends the job.
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "framework/dist/mpi_impl.h"

namespace amlp::dist {

namespace mpi {

void check(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) len = std::snprintf(text, sizeof text, "error %d", rc);
  throw Error(detail::concat(call, " failed: ", std::string(text, static_cast<size_t>(len))));
}

void wait(MPI_Request* r, int spins, int sleep_us) {
  for (int i = 0;; ++i) {
    int done = 0;
    check(MPI_Test(r, &done, MPI_STATUS_IGNORE), "MPI_Test");
    if (done) return;
    if (i < spins) {
      sched_yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(sleep_us));
    }
  }
}

}  // namespace mpi

namespace {

void flush_all() {
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
}

}  // namespace

void ProcessGroup::Impl::start_watcher(int rank, int size) {
  watcher = std::thread([this, rank, size] {
    std::vector<char> buf(mpi::kMaxMessage + 1);
    MPI_Request r;
    if (MPI_Irecv(buf.data(), mpi::kMaxMessage, MPI_CHAR, MPI_ANY_SOURCE, mpi::kFailTag, fail, &r) != MPI_SUCCESS) return;
    while (!stop.load(std::memory_order_acquire)) {
      int done = 0;
      MPI_Status st;
      if (MPI_Test(&r, &done, &st) != MPI_SUCCESS) return;
      if (!done) {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        continue;
      }
      int len = 0;
      MPI_Get_count(&st, MPI_CHAR, &len);
      const std::string error(buf.data(), static_cast<size_t>(std::max(len, 0)));
      if (!aborting.load()) {  // a rank failing itself already said why
        std::fprintf(stderr, "%s: error: rank %d of %d failed: %s (rank %d stops)\n", program.c_str(), st.MPI_SOURCE,
                     size, error.c_str(), rank);
        flush_all();
      }
      MPI_Request ack;  // the failed rank waits for this answer before it exits
      if (MPI_Isend(nullptr, 0, MPI_CHAR, st.MPI_SOURCE, mpi::kAckTag, fail, &ack) == MPI_SUCCESS) {
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        for (int sent = 0; !sent && std::chrono::steady_clock::now() < until;) {
          MPI_Test(&ack, &sent, MPI_STATUS_IGNORE);
          if (!sent) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
      }
      if (!aborting.load()) std::_Exit(1);
      if (MPI_Irecv(buf.data(), mpi::kMaxMessage, MPI_CHAR, MPI_ANY_SOURCE, mpi::kFailTag, fail, &r) != MPI_SUCCESS)
        return;
    }
    MPI_Cancel(&r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
  });
}

void ProcessGroup::Impl::stop_watcher() {
  stop.store(true, std::memory_order_release);
  if (watcher.joinable()) watcher.join();
}

void ProcessGroup::abort_all(const std::string& error, int exit_code) {
  flush_all();
  if (!impl_->mpi || size_ == 1) std::exit(exit_code);
  Impl& m = *impl_;
  m.aborting.store(true);
  const std::string msg = error.substr(0, mpi::kMaxMessage);
  std::vector<MPI_Request> sends, acks;
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank_) continue;
    MPI_Request s, a;
    if (MPI_Isend(msg.data(), static_cast<int>(msg.size()), MPI_CHAR, peer, mpi::kFailTag, m.fail, &s) == MPI_SUCCESS)
      sends.push_back(s);
    if (MPI_Irecv(nullptr, 0, MPI_CHAR, peer, mpi::kAckTag, m.fail, &a) == MPI_SUCCESS) acks.push_back(a);
  }
  // Every survivor answers once it printed its line; then this rank ends too.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  int all = 0;
  while (!all && std::chrono::steady_clock::now() < until) {
    if (MPI_Testall(static_cast<int>(acks.size()), acks.data(), &all, MPI_STATUSES_IGNORE) != MPI_SUCCESS) break;
    if (!all) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  flush_all();
  if (all) std::_Exit(exit_code);
  MPI_Abort(MPI_COMM_WORLD, exit_code);  // a survivor did not answer: MPI ends the job
  std::_Exit(exit_code);
}

}  // namespace amlp::dist
