// process_group.cpp — the group's setup, its frontend collectives and its end
// (process_group.h). The failure path is in failure.cpp.
#include "framework/process_group.h"

#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>

#include "framework/util/env.h"
#include "framework/runtime.h"

#ifdef ASYNCMLP_WITH_MPI
#include "framework/dist/mpi_impl.h"
#else
namespace amlp::dist {
struct ProcessGroup::Impl {
  std::string program = "asyncmlp";
};
}  // namespace amlp::dist
#endif

namespace amlp::dist {

namespace {

std::mutex group_mu;

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// The reductions recorded while record_reductions(true) is on (one record per
// process: there is one group).
struct ReductionLog {
  std::mutex mu;
  bool on = false;
  std::vector<ProcessGroup::Reduction> items;
};
ReductionLog& reduction_log() {
  static ReductionLog log;
  return log;
}

// Records one reduction that started at `t0` and has just completed.
void note_reduction(size_t bytes, double t0) {
  ReductionLog& log = reduction_log();
  std::lock_guard<std::mutex> lk(log.mu);
  if (log.on) log.items.push_back({bytes, t0, now_s()});
}
std::unique_ptr<ProcessGroup>& group_slot() {
  static std::unique_ptr<ProcessGroup> g;
  return g;
}

#ifdef ASYNCMLP_WITH_MPI
// Line `i` of a text ("" past its end).
std::string line_of(const std::string& text, size_t i) {
  size_t begin = 0;
  for (size_t k = 0; k < i; ++k) {
    const size_t nl = text.find('\n', begin);
    if (nl == std::string::npos) return "";
    begin = nl + 1;
  }
  const size_t end = text.find('\n', begin);
  return text.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

// "rank 1's options differ from rank 0's: 'a=1' vs 'a=2'".
std::string first_difference(const std::string& what, int rank, const std::string& mine, const std::string& root) {
  for (size_t i = 0;; ++i) {
    const std::string a = line_of(mine, i), b = line_of(root, i);
    if (a != b)
      return detail::concat("rank ", rank, "'s ", what, " differ from rank 0's: '", a, "' vs '", b,
                            "' (every rank must run with the same ", what, ")");
    if (a.empty() && b.empty()) break;
  }
  return detail::concat("rank ", rank, "'s ", what, " differ from rank 0's (every rank must run with the same ", what, ")");
}
#endif

}  // namespace

bool built_with_mpi() {
#ifdef ASYNCMLP_WITH_MPI
  return true;
#else
  return false;
#endif
}

bool launched_by_mpirun() { return env_settings().launched_by_mpirun; }

uint64_t text_hash(const std::string& text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::string rank_path(const std::string& path, int rank) {
  const size_t slash = path.find_last_of('/');
  const size_t dot = path.find_last_of('.');
  const std::string tag = ".rank" + std::to_string(rank);
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash) || dot == slash + 1 || dot == 0)
    return path + tag;
  return path.substr(0, dot) + tag + path.substr(dot);
}

ProcessGroup::ProcessGroup() : impl_(std::make_unique<Impl>()) {}

ProcessGroup::~ProcessGroup() {
#ifdef ASYNCMLP_WITH_MPI
  impl_->stop_watcher();  // never finalized: the process ends without MPI_Finalize
#endif
}

ProcessGroup* ProcessGroup::current() {
  std::lock_guard<std::mutex> lk(group_mu);
  return group_slot().get();
}

std::string ProcessGroup::name() const { return detail::concat("rank ", rank_, " of ", size_); }

void ProcessGroup::set_program_name(const std::string& name) { impl_->program = name; }

void ProcessGroup::record_reductions(bool on) {
  std::lock_guard<std::mutex> lk(reduction_log().mu);
  reduction_log().on = on;
}

std::vector<ProcessGroup::Reduction> ProcessGroup::take_reductions() {
  std::lock_guard<std::mutex> lk(reduction_log().mu);
  return std::move(reduction_log().items);
}

ProcessGroup& ProcessGroup::init() {
  std::lock_guard<std::mutex> lk(group_mu);
  std::unique_ptr<ProcessGroup>& slot = group_slot();
  if (slot) return *slot;
#ifndef ASYNCMLP_WITH_MPI
  throw DistError(
      "this build has no MPI: a distributed run needs it (install libopenmpi-dev and configure with -DASYNCMLP_MPI=ON)");
#else
  std::unique_ptr<ProcessGroup> g(new ProcessGroup);
  if (launched_by_mpirun()) {
    int provided = 0;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
      throw DistError("MPI_Init_thread failed: this process cannot join the distributed run");
    g->impl_->mpi = true;
    if (provided < MPI_THREAD_MULTIPLE) {
      MPI_Finalize();
      throw DistError(detail::concat("this MPI gives thread level ", provided, ", not MPI_THREAD_MULTIPLE (",
                                     MPI_THREAD_MULTIPLE, "), which the queues' workers need"));
    }
    Impl& m = *g->impl_;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);  // errors become exceptions, not an abort
    AMLP_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &g->rank_));
    AMLP_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &g->size_));
    MPI_Comm local;
    AMLP_MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, g->rank_, MPI_INFO_NULL, &local));
    AMLP_MPI_CHECK(MPI_Comm_rank(local, &g->local_rank_));
    AMLP_MPI_CHECK(MPI_Comm_size(local, &g->local_size_));
    MPI_Comm_free(&local);
    for (MPI_Comm* c : {&m.coll, &m.reduce, &m.fail, &m.vote}) AMLP_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, c));
    if (g->size_ > 1) m.start_watcher(g->rank_, g->size_);
  }
  slot = std::move(g);
  return *slot;
#endif
}

#ifdef ASYNCMLP_WITH_MPI

void ProcessGroup::check_same(const std::string& what, const std::string& text) {
  if (!impl_->mpi) return;
  const uint64_t mine = text_hash(text);
  std::vector<uint64_t> hashes(static_cast<size_t>(size_));
  MPI_Request r;
  AMLP_MPI_CHECK(MPI_Iallgather(&mine, 1, MPI_UINT64_T, hashes.data(), 1, MPI_UINT64_T, impl_->coll, &r));
  mpi::wait_frontend(&r);
  int differs = -1;
  for (int i = 1; i < size_ && differs < 0; ++i)
    if (hashes[static_cast<size_t>(i)] != hashes[0]) differs = i;
  if (differs < 0) return;
  // Every rank learns rank 0's text and the first differing rank's, so every
  // rank throws the same line.
  std::vector<char> root(text.begin(), text.end()), other(text.begin(), text.end());
  broadcast(root, 0);
  broadcast(other, differs);
  throw DistError(first_difference(what, differs, std::string(other.begin(), other.end()),
                                   std::string(root.begin(), root.end())));
}

void ProcessGroup::broadcast(std::vector<char>& bytes, int root) {
  if (!impl_->mpi) return;
  // The root's size first, so a rank with another size is an error, not a hang.
  uint64_t n = bytes.size();
  MPI_Request r;
  AMLP_MPI_CHECK(MPI_Ibcast(&n, 1, MPI_UINT64_T, root, impl_->coll, &r));
  mpi::wait_frontend(&r);
  bytes.resize(n);
  for (uint64_t at = 0; at < n;) {
    const int part = static_cast<int>(std::min<uint64_t>(n - at, 1u << 30));
    AMLP_MPI_CHECK(MPI_Ibcast(bytes.data() + at, part, MPI_BYTE, root, impl_->coll, &r));
    mpi::wait_frontend(&r);
    at += static_cast<uint64_t>(part);
  }
}

void ProcessGroup::broadcast(std::vector<float>& values, int root) {
  if (!impl_->mpi) return;
  std::vector<char> bytes(values.size() * sizeof(float));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  broadcast(bytes, root);
  if (bytes.size() != values.size() * sizeof(float))
    throw DistError(detail::concat(name(), ": broadcast of ", values.size(), " values from rank ", root, ", which has ",
                                   bytes.size() / sizeof(float)));
  std::memcpy(values.data(), bytes.data(), bytes.size());
}

std::vector<std::vector<double>> ProcessGroup::gather(const std::vector<double>& figures) {
  if (!impl_->mpi) return {figures};
  const uint64_t k = figures.size();
  std::vector<uint64_t> counts(static_cast<size_t>(size_));
  MPI_Request r;
  AMLP_MPI_CHECK(MPI_Iallgather(&k, 1, MPI_UINT64_T, counts.data(), 1, MPI_UINT64_T, impl_->coll, &r));
  mpi::wait_frontend(&r);
  for (int i = 0; i < size_; ++i)
    if (counts[static_cast<size_t>(i)] != k)
      throw Error(detail::concat("gather: rank ", i, " sent ", counts[static_cast<size_t>(i)], " figures, rank ", rank_,
                                 " ", k));
  std::vector<double> all(rank_ == 0 ? k * static_cast<size_t>(size_) : 0);
  AMLP_MPI_CHECK(MPI_Igather(figures.data(), static_cast<int>(k), MPI_DOUBLE, all.data(), static_cast<int>(k),
                             MPI_DOUBLE, 0, impl_->coll, &r));
  mpi::wait_frontend(&r);
  std::vector<std::vector<double>> rows;
  for (int i = 0; rank_ == 0 && i < size_; ++i)
    rows.emplace_back(all.begin() + static_cast<long>(i * k), all.begin() + static_cast<long>((i + 1) * k));
  return rows;
}

void ProcessGroup::barrier() {
  if (!impl_->mpi) return;
  MPI_Request r;
  AMLP_MPI_CHECK(MPI_Ibarrier(impl_->coll, &r));
  mpi::wait_frontend(&r);
}

void ProcessGroup::all_reduce_sum(const float* x, float* y, size_t n) {
  const double t0 = now_s();
  if (!impl_->mpi || size_ == 1) {
    if (n) std::memcpy(y, x, n * sizeof(float));
    note_reduction(n * sizeof(float), t0);
    return;
  }
  for (size_t at = 0; at < n;) {  // MPI counts are ints
    const int part = static_cast<int>(std::min<size_t>(n - at, size_t(1) << 30));
    MPI_Request r;
    AMLP_MPI_CHECK(MPI_Iallreduce(x + at, y + at, part, MPI_FLOAT, MPI_SUM, impl_->reduce, &r));
    mpi::wait(&r, 256, 20);
    at += static_cast<size_t>(part);
  }
  note_reduction(n * sizeof(float), t0);
}

void* ProcessGroup::nccl_comm(int gpu) {
  std::lock_guard<std::mutex> lk(impl_->nccl_mu);
  auto it = impl_->nccl.find(gpu);
#ifdef ASYNCMLP_WITH_NCCL
  if (it == impl_->nccl.end()) it = impl_->nccl.emplace(gpu, make_nccl_comm(*this, gpu)).first;
  return it->second;
#else
  (void)it;
  throw DistError(detail::concat("cuda:", gpu, ": this build has no NCCL (nccl.h / libnccl not found): ranks on GPUs "
                                 "cannot reduce across processes"));
#endif
}

bool ProcessGroup::agree_to_stop(bool stop, int lag) {
  if (!impl_->mpi) return stop;
  if (lag < 0) throw Error(detail::concat("agree_to_stop: lag must be >= 0, got ", lag));
  std::deque<Impl::Vote>& votes = impl_->votes;
  Impl::Vote v{MPI_REQUEST_NULL, std::make_unique<int[]>(2)};
  v.flags[0] = stop ? 1 : 0;
  AMLP_MPI_CHECK(MPI_Iallreduce(&v.flags[0], &v.flags[1], 1, MPI_INT, MPI_MAX, impl_->vote, &v.request));
  votes.push_back(std::move(v));
  if (votes.size() <= static_cast<size_t>(lag)) return false;
  mpi::wait_frontend(&votes.front().request);  // posted `lag` batches ago: done unless a rank lags behind
  const bool everyone = votes.front().flags[1] != 0;
  votes.pop_front();
  return everyone;
}

void ProcessGroup::finalize() {
  if (!impl_->mpi) return;
  waitall();
  for (Impl::Vote& v : impl_->votes) mpi::wait_frontend(&v.request);
  impl_->votes.clear();
  barrier();  // every rank is done: no failure message can come now
  impl_->stop_watcher();
  for (MPI_Comm* c : {&impl_->coll, &impl_->reduce, &impl_->fail, &impl_->vote})
    if (*c != MPI_COMM_NULL) MPI_Comm_free(c);
  MPI_Finalize();
  impl_->mpi = false;
}

#else  // no MPI: one rank, and init() never returns a group

void ProcessGroup::check_same(const std::string&, const std::string&) {}
void ProcessGroup::broadcast(std::vector<char>&, int) {}
void ProcessGroup::broadcast(std::vector<float>&, int) {}
std::vector<std::vector<double>> ProcessGroup::gather(const std::vector<double>& figures) { return {figures}; }
void ProcessGroup::barrier() {}
void ProcessGroup::all_reduce_sum(const float* x, float* y, size_t n) {
  const double t0 = now_s();
  if (n) std::memcpy(y, x, n * sizeof(float));
  note_reduction(n * sizeof(float), t0);
}
void* ProcessGroup::nccl_comm(int) { throw DistError("this build has no MPI: no NCCL communicator across processes"); }
bool ProcessGroup::agree_to_stop(bool stop, int) { return stop; }
void ProcessGroup::finalize() {}
[[noreturn]] void ProcessGroup::abort_all(const std::string&, int exit_code) { std::exit(exit_code); }

#endif

}  // namespace amlp::dist
