#include "framework/memory.h"

#include <unistd.h>

#include <cstdio>

#include "framework/error.h"

namespace amlp {

Storage::~Storage() {
  if (data_) pool_->release(data_, bytes_);
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

std::shared_ptr<Storage> Pool::allocate(size_t bytes) {
  size_t sz = round(bytes == 0 ? 1 : bytes);
  void* p = nullptr;
  {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = cache_.find(sz);
    if (it != cache_.end() && !it->second.empty()) {
      p = it->second.back();
      it->second.pop_back();
      cached_bytes_ -= sz;
    } else {
      p = raw_alloc_locked(sz);
      if (!p) {  // release the cache and retry once
        for (auto& kv : cache_)
          for (void* q : kv.second) {
            raw_->raw_free(q);
            reserved_ -= kv.first;
          }
        cache_.clear();
        cached_bytes_ = 0;
        p = raw_alloc_locked(sz);
      }
    }
    if (!p) throw OutOfMemory(device_, bytes, in_use_.load(), reserved_.load());
  }
  allocs_++;
  bytes_total_ += sz;
  update_max(peak_, in_use_ += sz);
  return std::make_shared<Storage>(this, p, sz);
}

void Pool::release(void* p, size_t bytes) noexcept {
  {
    std::lock_guard<std::mutex> lk(mu_);
    cache_[bytes].push_back(p);
    cached_bytes_ += bytes;
  }
  in_use_ -= bytes;
  frees_++;
}

MemoryStats Pool::stats() const {
  MemoryStats s;
  s.bytes_in_use = in_use_.load();
  s.peak_bytes = peak_.load();
  s.reserved_bytes = reserved_.load();
  s.alloc_count = allocs_.load();
  s.free_count = frees_.load();
  s.raw_alloc_count = raw_allocs_.load();
  s.bytes_allocated_total = bytes_total_.load();
  std::lock_guard<std::mutex> lk(mu_);
  s.limit_bytes = limit_;
  return s;
}

void Pool::reset_peak() { peak_ = in_use_.load(); }

void Pool::empty_cache() {
  std::lock_guard<std::mutex> lk(mu_);
  for (auto& kv : cache_)
    for (void* q : kv.second) {
      raw_->raw_free(q);
      reserved_ -= kv.first;
    }
  cache_.clear();
  cached_bytes_ = 0;
}

void Pool::set_limit(size_t bytes) {
  std::lock_guard<std::mutex> lk(mu_);
  limit_ = bytes;
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
