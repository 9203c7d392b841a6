// host_arena.cpp — the CPU backend's huge-page arena and its populator (host_arena.h).
#include "framework/cpu/host_arena.h"

#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <new>
#include <system_error>

#include "framework/core/memory/address_space.h"
#include "framework/util/elapsed.h"
#include "framework/util/env.h"
#include "framework/cpu/blas_room.h"

namespace amlp::cpu {

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14; older headers lack the name, older kernels answer EINVAL
#endif

namespace {

size_t page_bytes() {
  static const size_t page = [] {
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? static_cast<size_t>(p) : size_t(4096);
  }();
  return page;
}

// False once the kernel has said it does not know MADV_POPULATE_WRITE.
std::atomic<bool> populate_write_known{true};

// MADV_POPULATE_WRITE over [p, p + len) one 2 MiB piece at a time: the call
// holds the process's mmap lock while it populates, and the frontend's mmap
// of its next block must not wait for a whole block's worth of fresh memory.
int populate_write(char* p, size_t len) {
  for (size_t off = 0; off < len; off += HostArena::kMapBytes)
    if (madvise(p + off, std::min(HostArena::kMapBytes, len - off), MADV_POPULATE_WRITE) != 0) return -1;
  return 0;
}

// Makes every page of [p, p + len) resident and writable now, on this thread.
// False when the memory cannot be had (the caller unmaps and reports out of memory).
bool populate(char* p, size_t len) {
  if (populate_write_known.load(std::memory_order_relaxed)) {
    if (populate_write(p, len) == 0) return true;
    if (errno == ENOMEM || errno == EFAULT) return false;
#ifdef EHWPOISON
    if (errno == EHWPOISON) return false;
#endif
    populate_write_known.store(false, std::memory_order_relaxed);  // EINVAL (before 5.14) or alike: touch instead
  }
  // One write per page: a huge page takes the first, every 4 KiB page its own.
  const size_t page = page_bytes();
  for (size_t off = 0; off < len; off += page) static_cast<volatile char*>(p)[off] = 0;
  return true;
}

// A fresh, 2 MiB-aligned anonymous mapping of `len` bytes (a multiple of the
// page size), or nullptr: over-map by 2 MiB, then trim the ends. Under an
// address-space limit, only where it leaves OpenBLAS its room (blas_room.h),
// checked and mapped under room_mutex(); `why` says so when it does not.
char* map_aligned(size_t len, size_t align, std::string& why) {
  const size_t over = len + align - page_bytes();
  std::unique_lock<std::mutex> room;
  if (detail::address_space_limited()) {  // read under the lock: what the holder mapped counts
    room = std::unique_lock<std::mutex>(room_mutex());
    why = pool_mapping_problem(over, detail::address_space_now());
    if (!why.empty()) return nullptr;
  }
  void* m = mmap(nullptr, over, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return nullptr;
  char* base = static_cast<char*>(m);
  char* p = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(base) + align - 1) & ~(uintptr_t(align) - 1));
  if (p > base) munmap(base, static_cast<size_t>(p - base));
  if (char* end = base + over; p + len < end) munmap(p + len, static_cast<size_t>(end - (p + len)));
  return p;
}

// A fresh mapping of `len` bytes (a multiple of the page size), 2 MiB-aligned
// and advised MADV_HUGEPAGE, or nullptr when the memory cannot be had.
// `later`: whether it is left for the populator. Without MADV_POPULATE_WRITE
// only writes populate, and a write may not race a kernel's (or, in a chunk,
// another block's data): then it is populated here, before anything else can
// see it.
char* map_huge(size_t len, bool& later, std::string& why) {
  later = populate_write_known.load(std::memory_order_relaxed);
  char* p = map_aligned(len, HostArena::kMapBytes, why);
  if (!p) return nullptr;
  madvise(p, len, MADV_HUGEPAGE);  // a hint: without THP (or with it off) the pages are 4 KiB
  if (!later && !populate(p, len)) {
    munmap(p, len);
    return nullptr;
  }
  return p;
}

// Adds the time from its making to its end to a counter: the worker's time
// in prepare_write's slow path, whichever way it returns.
struct AddElapsed {
  std::atomic<uint64_t>& to;
  std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
  ~AddElapsed() { to.fetch_add(ns_since(t0), std::memory_order_relaxed); }
};

}  // namespace

// Large blocks are mappings of their own, the block rounded up to whole
// pages, so RSS counts what the pool reserved and no more; the populator
// makes them resident (host_arena.h). Small ones are carved, 64-byte aligned,
// from the current chunk (bytes is a multiple of the pool's 512-byte rounding).
void* HostArena::allocate(size_t bytes) {
  why_failed_.clear();
  if (bytes < kMapBytes) return chunk_alloc(bytes);
  const size_t page = page_bytes();
  const size_t len = (bytes + page - 1) / page * page;
  bool later;
  char* p = map_huge(len, later, why_failed_);
  if (!p) return nullptr;
  try {
    std::lock_guard<std::mutex> lk(maps_mu_);
    maps_.emplace(p, new_mapping(p, len, later));
  } catch (const std::bad_alloc&) {
    munmap(p, len);
    return nullptr;
  }
  return p;
}

// A fresh mapping's state; with `later`, queued for the populator (started
// with the first one). Without a populator thread the writer's worker
// populates it. Throws only bad_alloc, before anything is queued.
HostArena::Mapping HostArena::new_mapping(char* base, size_t len, bool later) {
  Mapping m{len, ++next_id_, !later, false, false, 0};
  if (!later) return m;
  unresident_.fetch_add(1, std::memory_order_relaxed);
  if (!populator_.joinable()) {
    try {
      populator_ = std::thread([this] { populator_loop(); });
    } catch (const std::system_error&) {
      return m;
    }
    // Named and at idle priority from here, before this allocation returns:
    // it takes only what the process's other threads leave of the cores
    // (beside the BLAS threads it slowed the kernels by as much as it saved),
    // and the worker never waits for it (prepare_write).
    (void)pthread_setname_np(populator_.native_handle(), "amlp-populator");  // as top and perf show it
    if (!env_settings().populator_normal_priority) {
      sched_param sp{};
      (void)pthread_setschedparam(populator_.native_handle(), SCHED_IDLE, &sp);  // refused: it runs as any thread
    }
  }
  to_populate_.emplace_back(base, m.id);
  m.queued = true;
  populate_cv_.notify_one();
  return m;
}

HostArena::Mapping* HostArena::mapping_of(const void* p, char** base) {
  if (auto it = maps_.find(p); it != maps_.end()) {
    *base = static_cast<char*>(const_cast<void*>(p));
    return &it->second;
  }
  auto s = small_.find(p);
  if (s == small_.end()) return nullptr;
  auto c = chunks_.find(s->second);
  if (c == chunks_.end()) return nullptr;
  *base = c->first;
  return &c->second.m;
}

HostArena::Mapping* HostArena::job(char* base, uint64_t id) {
  if (auto it = maps_.find(base); it != maps_.end()) return it->second.id == id ? &it->second : nullptr;
  if (auto c = chunks_.find(base); c != chunks_.end()) return c->second.m.id == id ? &c->second.m : nullptr;
  return nullptr;
}

// The populator: one large block at a time, oldest first, without the lock
// while it populates. A block freed meanwhile is skipped, or, if it was freed
// during its populate, populate met no mapping (ENOMEM) or a newer one at the
// same address, whose contents MADV_POPULATE_WRITE leaves as they are; the
// id keeps a newer mapping from being marked resident by it.
void HostArena::populator_loop() {  // named and at idle priority by its creator (new_mapping)
  std::unique_lock<std::mutex> lk(maps_mu_);
  for (;;) {
    populate_cv_.wait(lk, [&] { return stopping_ || (!held_ && !to_populate_.empty()); });
    if (stopping_) return;
    const auto [p, id] = to_populate_.front();
    to_populate_.pop_front();
    Mapping* m = job(p, id);
    if (!m || m->resident || m->started) continue;
    m->started = true;
    const size_t len = m->len, fresh = len - std::min(len, m->faulted);  // a worker's head start counted there
    lk.unlock();
    const auto t0 = std::chrono::steady_clock::now();
    const bool ok = populate_write(p, len) == 0;
    populator_ns_.fetch_add(ns_since(t0), std::memory_order_relaxed);
    if (ok) populator_bytes_.fetch_add(fresh, std::memory_order_relaxed);
    lk.lock();
    if ((m = job(p, id))) {
      set_resident(*m, ok);  // else the worker tries again, and reports out of memory
      m->queued = m->started = false;
    }
  }
}

// On the worker, before a kernel writes p (host_arena.h): p's mapping (a small
// block's: its chunk) is populated here. If the populator is on it, the
// worker first gives newer queued mappings a head start (the populator goes
// oldest first) while it may finish, then populates the rest of it
// itself, beside the populator (populating is idempotent: a page either
// thread made present is skipped): the worker never waits for the populator,
// whose priority is the lowest (populator_loop). The mapping's state stays
// where it is while unlocked: p's writer holds the block, so nobody frees it
// or its chunk (and unordered_map elements keep their addresses).
bool HostArena::prepare_write(void* p) noexcept {
  if (!p) return false;
  // Every mapping resident (the steady state: blocks come from the pool's
  // cache): nothing to look up. A mapping made after this read was not
  // handed to p's writer before it was queued, so it is not p's.
  if (unresident_.load(std::memory_order_acquire) == 0) return true;
  std::unique_lock<std::mutex> lk(maps_mu_);
  char* base = nullptr;
  Mapping* m = mapping_of(p, &base);
  if (!m || m->resident) return true;
  const AddElapsed paid{worker_ns_};  // from here on the worker pays for fresh memory (BackingStats)
  while (m->queued && m->started && !held_ && !stopping_) {
    char* piece = nullptr;
    size_t n = 0;
    int looked = 0;  // the newest few only: the lock is held, and the queue may hold thousands
    for (auto j = to_populate_.rbegin(); j != to_populate_.rend() && !piece && looked++ < 64; ++j) {
      Mapping* g = job(j->first, j->second);
      if (!g || g->started || g->resident || g->faulted >= g->len) continue;  // freed, or done
      piece = j->first + g->faulted;
      n = std::min(kMapBytes, g->len - g->faulted);
      g->faulted += n;
    }
    if (!piece) break;  // nothing newer: p's mapping itself, below
    lk.unlock();
    // Only a head start: the mapping's own populate still covers it whole
    // (and finds these pages present). Freed meanwhile, it meets no mapping
    // or a newer one, whose contents populating leaves as they are.
    const auto t0 = std::chrono::steady_clock::now();
    if (madvise(piece, n, MADV_POPULATE_WRITE) == 0) worker_bytes_.fetch_add(n, std::memory_order_relaxed);
    worker_populate_ns_.fetch_add(ns_since(t0), std::memory_order_relaxed);
    lk.lock();
  }
  if (m->resident) return true;
  // Not resident yet (not started, the populator on it, held or stopped, or
  // its populate failed): this thread populates it, with MADV_POPULATE_WRITE only (a
  // chunk's other blocks may hold data, so no write may populate it). Where
  // that is not known, the kernel's writes fault the pages in.
  // Beside the populator, its bytes stay its own (it counts the mapping as it
  // ends), and its end resets the mapping's state.
  const bool beside = m->started && m->queued && !held_ && !stopping_;
  m->started = true;
  const size_t len = m->len, fresh = beside ? 0 : len - std::min(len, m->faulted);
  lk.unlock();
  const auto t0 = std::chrono::steady_clock::now();
  const int rc = populate_write(base, len);
  const int err = errno;
  worker_populate_ns_.fetch_add(ns_since(t0), std::memory_order_relaxed);
  if (rc == 0) worker_bytes_.fetch_add(fresh, std::memory_order_relaxed);
  lk.lock();
  if (rc == 0 || !beside) set_resident(*m, rc == 0);
  if (!beside) m->queued = m->started = false;
  if (rc == 0) return true;
#ifdef EHWPOISON
  if (err == EHWPOISON) return false;
#endif
  return err != ENOMEM && err != EFAULT;
}

void HostArena::set_resident(Mapping& m, bool ok) {
  if (ok && !m.resident) unresident_.fetch_sub(1, std::memory_order_release);
  m.resident = ok;
}

void HostArena::forget(const Mapping& m) {
  if (!m.resident) unresident_.fetch_sub(1, std::memory_order_release);
}

HostArena::BackingStats HostArena::backing_stats() const {
  BackingStats s;
  s.worker_ns = worker_ns_.load(std::memory_order_relaxed);
  s.worker_populate_ns = worker_populate_ns_.load(std::memory_order_relaxed);
  s.worker_bytes = worker_bytes_.load(std::memory_order_relaxed);
  s.populator_ns = populator_ns_.load(std::memory_order_relaxed);
  s.populator_bytes = populator_bytes_.load(std::memory_order_relaxed);
  return s;
}

bool HostArena::resident(const void* p) const {
  std::lock_guard<std::mutex> lk(maps_mu_);
  char* base = nullptr;
  const Mapping* m = const_cast<HostArena*>(this)->mapping_of(p, &base);
  return !m || m->resident;
}

void HostArena::hold_populator(bool hold) {
  std::lock_guard<std::mutex> lk(maps_mu_);
  held_ = hold;
  populate_cv_.notify_all();
}

void* HostArena::chunk_alloc(size_t bytes) {
  bytes = (bytes + 63) / 64 * 64;
  std::lock_guard<std::mutex> lk(maps_mu_);
  try {
    if (!current_ || current_->used + bytes > kMapBytes) {
      bool later;
      char* base = map_huge(kMapBytes, later, why_failed_);
      if (!base) return nullptr;
      Chunk* old = current_;
      try {
        current_ = &chunks_.emplace(base, Chunk{base, 0, 0, new_mapping(base, kMapBytes, later)}).first->second;
      } catch (...) {
        munmap(base, kMapBytes);
        throw;
      }
      if (old && old->live == 0) release_chunk(old);  // nothing of it is in use: give it back
    }
    char* p = current_->base + current_->used;
    small_.emplace(p, current_->base);
    current_->used += bytes;
    ++current_->live;
    return p;
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}

void HostArena::release_chunk(Chunk* c) noexcept {
  char* base = c->base;
  forget(c->m);
  chunks_.erase(base);
  munmap(base, kMapBytes);
}

void HostArena::deallocate(void* p) noexcept {
  std::lock_guard<std::mutex> lk(maps_mu_);
  if (auto it = maps_.find(p); it != maps_.end()) {
    munmap(p, it->second.len);
    forget(it->second);
    maps_.erase(it);
    return;
  }
  auto s = small_.find(p);
  if (s == small_.end()) return;  // not a live block: nothing to free
  auto c = chunks_.find(s->second);
  small_.erase(s);
  if (c == chunks_.end()) return;
  Chunk& chunk = c->second;
  if (--chunk.live > 0) return;
  if (&chunk == current_)
    chunk.used = 0;  // empty: carve it again from the start (its pages stay resident)
  else
    release_chunk(&chunk);
}

HostArena::~HostArena() {
  {
    std::lock_guard<std::mutex> lk(maps_mu_);
    stopping_ = true;
    populate_cv_.notify_all();
  }
  if (populator_.joinable()) populator_.join();
  for (auto& [base, chunk] : chunks_) munmap(base, kMapBytes);
}

size_t HostArena::mapped_bytes(const void* p) const {
  std::lock_guard<std::mutex> lk(maps_mu_);
  auto it = maps_.find(p);
  return it == maps_.end() ? 0 : it->second.len;
}

const void* HostArena::chunk_of(const void* p) const {
  std::lock_guard<std::mutex> lk(maps_mu_);
  auto it = small_.find(p);
  return it == small_.end() ? nullptr : it->second;
}

size_t HostArena::chunk_count() const {
  std::lock_guard<std::mutex> lk(maps_mu_);
  return chunks_.size();
}

}  // namespace amlp::cpu
