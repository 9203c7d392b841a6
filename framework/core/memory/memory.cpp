// memory.cpp — the tracked caching pool (memory.h).
#include "framework/core/memory/memory.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <limits>
#include <new>

#include "framework/core/memory/sanitizers.h"
#include "framework/error.h"
#include "framework/runtime.h"

#if AMLP_ASAN
#include <sanitizer/asan_interface.h>
#define AMLP_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define AMLP_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define AMLP_POISON(p, n) ((void)(p), (void)(n))
#define AMLP_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace amlp {

Storage::~Storage() {
  if (!owns_block_.load(std::memory_order_acquire)) return;  // handed over: its new owner returns it
  if (void* p = data_.load(std::memory_order_acquire)) pool_->release(p, bytes_);
}

void Storage::allocate_now() {
  if (data_.load(std::memory_order_acquire)) return;
  data_.store(pool_->take(bytes_, bytes_), std::memory_order_release);
}

void Storage::prepare_write() {
  if (void* p = data()) pool_->prepare_write(p, bytes_);
}

void Pool::prepare_write(void* p, size_t bytes) {
  if (!raw_->prepare_write(p)) throw OutOfMemory(device_, bytes, in_use_.load(), reserved_.load());
}

Pool::Pool(std::string device, std::unique_ptr<RawAllocator> raw)
    : device_(std::move(device)), raw_(std::move(raw)) {}

Pool::~Pool() { empty_cache(); }

static void update_max(std::atomic<size_t>& m, size_t v) {
  size_t cur = m.load(std::memory_order_relaxed);
  while (v > cur && !m.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
}

void* Pool::raw_alloc_locked(size_t bytes) {
  if (limit_ && reserved_.load() + bytes > limit_) return nullptr;
  void* p = raw_->raw_alloc(bytes);
  if (p) {
    raw_allocs_++;
    reserved_ += bytes;
  }
  return p;
}

std::vector<std::pair<void*, size_t>> Pool::take_cache_locked() {
  std::vector<std::pair<void*, size_t>> blocks;
  blocks.reserve(cache_.size());
  for (auto& kv : cache_)
    for (void* q : kv.second) blocks.emplace_back(q, kv.first);
  cache_.clear();
  cached_bytes_ = 0;
  for (const auto& b : steps_.take_free()) blocks.push_back(b);  // the slots' free blocks too
  return blocks;
}

// One device synchronisation for the whole batch, then the frees.
void Pool::free_blocks(const std::vector<std::pair<void*, size_t>>& blocks) noexcept {
  if (blocks.empty()) return;
  raw_->before_raw_free();
  for (const auto& [p, bytes] : blocks) {
    if (raw_->host_memory()) AMLP_UNPOISON(p, bytes);
    raw_->raw_free(p);
    reserved_ -= bytes;
  }
}

size_t Pool::block_size(size_t bytes) const {
  if (bytes > std::numeric_limits<size_t>::max() - kRound)  // rounding up would wrap to a small block
    throw OutOfMemory(device_, bytes, in_use_.load(), reserved_.load());
  return round(bytes == 0 ? 1 : bytes);
}

std::shared_ptr<Storage> Pool::allocate(size_t bytes, bool offered_when_dropped) {
  const size_t sz = block_size(bytes);
  std::shared_ptr<Storage> live;  // declared before the lock: a Storage that dies here releases outside it
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (steps_.open())
      if (StepSlots::Block* b = steps_.next(); b && !b->free && b->size == sz) {
        live = b->owner.lock();
        if (live && held_by_queued_ops_only(live)) {  // the step's buffer again, ordered after its queued uses
          steps_.skip();
          return live;
        }
      }
  }
  live.reset();
  void* p = take(sz, bytes, /*in_step=*/true);
  std::shared_ptr<Storage> s;
  try {
    s = std::make_shared<Storage>(this, p, sz, offered_when_dropped);
  } catch (...) {
    release(p, sz);
    throw;
  }
  std::lock_guard<std::mutex> lk(mu_);
  steps_.set_owner(p, s);
  return s;
}

void Pool::offer(const std::shared_ptr<Storage>& s) {
  if (!s->allocated() || s->pins() == 0 || !held_by_queued_ops_only(s)) return;  // dies now, or is held elsewhere
  std::lock_guard<std::mutex> lk(mu_);
  if (steps_.owned_bytes() > 0) return;  // step graphs hand their slots out themselves
  try {
    offers_[s->bytes()].push_back(s);
  } catch (const std::bad_alloc&) {
    return;  // not offered: the block returns when its ops ran, as under enqueue
  }
  if (++offer_entries_ < 4096) return;
  offer_entries_ = 0;  // sweep the references whose buffers died
  for (auto it = offers_.begin(); it != offers_.end();) {
    auto& v = it->second;
    v.erase(std::remove_if(v.begin(), v.end(), [](const std::weak_ptr<Storage>& w) { return w.expired(); }), v.end());
    offer_entries_ += v.size();
    it = v.empty() ? offers_.erase(it) : std::next(it);
  }
}

std::shared_ptr<Storage> Pool::allocate_reusing(size_t bytes, Usable usable, const void* ctx,
                                                std::shared_ptr<Storage>& predecessor) {
  const size_t sz = block_size(bytes);
  std::shared_ptr<Storage> old;
  std::vector<std::shared_ptr<Storage>> looked_at;  // released after the lock: one may be the last reference
  {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = steps_.owned_bytes() > 0 ? offers_.end() : offers_.find(sz);
    if (it != offers_.end()) {
      auto& v = it->second;
      for (size_t i = v.size(); i-- > 0;) {
        std::shared_ptr<Storage> live = v[i].lock();
        // Not pending: its ops ran, or are letting go, and it returns its block itself.
        const bool pending = live && held_by_queued_ops_only(live);
        const bool take = pending && usable(*live, ctx);
        if (take || !pending) {
          v.erase(v.begin() + static_cast<std::ptrdiff_t>(i));
          --offer_entries_;
        }
        if (take) {
          old = std::move(live);
          break;
        }
        looked_at.push_back(std::move(live));
      }
    }
  }
  predecessor.reset();
  if (!old) return allocate(bytes, /*offered_when_dropped=*/true);
  auto s = std::make_shared<Storage>(this, old->data(), sz, /*offered_when_dropped=*/true);
  s->inherit_uses(*old);  // a write on another queue waits for them all
  old->owns_block_.store(false, std::memory_order_release);
  allocs_++;
  frees_++;
  handovers_++;
  bytes_total_ += sz;
  predecessor = std::move(old);
  return s;
}

std::shared_ptr<Storage> Pool::allocate_later(size_t bytes) {
  return std::make_shared<Storage>(this, nullptr, block_size(bytes));
}

void* Pool::take(size_t sz, size_t requested, bool in_step) {
  std::unique_lock<std::mutex> lk(mu_);
  const bool step = in_step && steps_.open();
  void* p = step ? steps_.take(sz) : nullptr;
  if (!p) {
    auto it = cache_.find(sz);
    if (it != cache_.end() && !it->second.empty()) {
      p = it->second.back();
      it->second.pop_back();
      cached_bytes_ -= sz;
    } else {
      p = raw_alloc_locked(sz);
      if (!p) {  // release the cache and retry once
        free_blocks(take_cache_locked());
        p = raw_alloc_locked(sz);
      }
    }
    if (!p) {
      const size_t reserved = reserved_.load();
      const bool over = limit_ && reserved + sz > limit_;
      throw OutOfMemory(device_, requested, in_use_.load(), reserved, over ? limit_ : 0,
                        over ? limit_source_ : raw_->why_failed());
    }
    if (step) {
      const auto displaced = steps_.adopt(p, sz);  // the block this position had, free
      if (displaced.first) cache_locked(displaced.first, displaced.second);
    }
  }
  if (raw_->host_memory()) AMLP_UNPOISON(p, sz);
  lk.unlock();
  allocs_++;
  bytes_total_ += sz;
  update_max(peak_, in_use_ += sz);
  return p;
}

void Pool::cache_locked(void* p, size_t bytes) noexcept {
  try {
    cache_[bytes].push_back(p);
  } catch (const std::bad_alloc&) {  // no room to remember it: give it back instead
    raw_->before_raw_free();
    raw_->raw_free(p);
    reserved_ -= bytes;
    return;
  }
  cached_bytes_ += bytes;
  if (raw_->host_memory()) AMLP_POISON(p, bytes);  // a kernel that kept a stale pointer trips ASan
}

void Pool::release(void* p, size_t bytes) noexcept {
  in_use_ -= bytes;
  frees_++;
  std::lock_guard<std::mutex> lk(mu_);
  if (steps_.release(p)) {  // a graph slot's: kept for the same position of a later step
    if (raw_->host_memory()) AMLP_POISON(p, bytes);
    return;
  }
  cache_locked(p, bytes);
}

void Pool::begin_step_memory() {
  std::lock_guard<std::mutex> lk(mu_);
  if (steps_.open())
    for (const auto& [p, bytes] : steps_.end()) cache_locked(p, bytes);
  steps_.begin();
}

void Pool::end_step_memory() {
  std::lock_guard<std::mutex> lk(mu_);
  for (const auto& [p, bytes] : steps_.end()) cache_locked(p, bytes);
}

void Pool::drop_step_memory() {
  std::lock_guard<std::mutex> lk(mu_);
  for (const auto& [p, bytes] : steps_.clear()) cache_locked(p, bytes);
}

size_t Pool::step_memory_bytes() const {
  std::lock_guard<std::mutex> lk(mu_);
  return steps_.owned_bytes();
}

MemoryStats Pool::stats() const {
  MemoryStats s;
  s.bytes_in_use = in_use_.load();
  s.peak_bytes = peak_.load();
  s.reserved_bytes = reserved_.load();
  s.alloc_count = allocs_.load();
  s.free_count = frees_.load();
  s.raw_alloc_count = raw_allocs_.load();
  const int64_t calls = raw_->device_allocs();
  s.device_allocs = calls >= 0 ? static_cast<uint64_t>(calls) : s.raw_alloc_count;
  s.bytes_allocated_total = bytes_total_.load();
  s.stream_reuses = handovers_.load();
  raw_->add_fresh_stats(s);
  std::lock_guard<std::mutex> lk(mu_);
  s.limit_bytes = limit_;
  return s;
}

void Pool::reset_peak() { peak_ = in_use_.load(); }

void Pool::empty_cache() {
  std::vector<std::pair<void*, size_t>> blocks;
  {
    std::lock_guard<std::mutex> lk(mu_);
    blocks = take_cache_locked();
  }
  free_blocks(blocks);
}

void Pool::set_limit(size_t bytes, std::string source) {
  std::lock_guard<std::mutex> lk(mu_);
  limit_ = bytes;
  limit_source_ = std::move(source);
}

MemoryBudget Pool::limit() const {
  std::lock_guard<std::mutex> lk(mu_);
  return {limit_, limit_source_};
}

size_t process_rss_bytes() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  unsigned long size = 0, resident = 0;
  int n = std::fscanf(f, "%lu %lu", &size, &resident);
  std::fclose(f);
  return n == 2 ? resident * static_cast<size_t>(sysconf(_SC_PAGESIZE)) : 0;
}

}  // namespace amlp
