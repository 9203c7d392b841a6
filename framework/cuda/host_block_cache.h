// host_block_cache.h — a cache of host blocks (pinned, on CUDA) by size class,
// so an asynchronous copy to the host (Tensor::to_host_async) pins memory only
// the first time a size is seen, not once per call: cudaHostAlloc and
// cudaFreeHost each cost far more than the copy of a loss value.
//
//   HostBlockCache cache(pin, unpin, 256 << 20);
//   void* p = cache.get(bytes);   // a cached block of bytes' class, or a new one
//   cache.put(p);                 // kept for the next get, freed past the cap
//
// Classes are powers of two from 4 KiB, so a block serves any request of its
// class. Thread-safe (put comes from whichever thread drops a HostCopy).
// No CUDA here: the backend passes its allocator in, a test a fake one.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

namespace amlp::cuda {

class HostBlockCache {
 public:
  using Alloc = std::function<void*(size_t)>;  // throws on failure
  using Free = std::function<void(void*)>;     // never throws
  struct Stats {
    uint64_t allocations = 0;  // blocks made (the allocator's calls)
    uint64_t reuses = 0;       // gets served from the cache
    size_t cached_bytes = 0;   // idle blocks kept
    size_t live_blocks = 0;    // handed out, not yet put back
  };

  HostBlockCache(Alloc alloc, Free free, size_t max_cached_bytes)
      : alloc_(std::move(alloc)), free_(std::move(free)), max_cached_(max_cached_bytes) {}
  ~HostBlockCache() { clear(); }
  HostBlockCache(const HostBlockCache&) = delete;
  HostBlockCache& operator=(const HostBlockCache&) = delete;

  static size_t size_class(size_t bytes) {
    size_t c = size_t(4) << 10;
    while (c < bytes) c <<= 1;
    return c;
  }

  void* get(size_t bytes) {
    const size_t c = size_class(bytes);
    {
      std::lock_guard<std::mutex> lk(mu_);
      auto it = idle_.find(c);
      if (it != idle_.end() && !it->second.empty()) {
        void* p = it->second.back();
        it->second.pop_back();
        cached_ -= c;
        live_[p] = c;
        ++stats_.reuses;
        return p;
      }
    }
    void* p = alloc_(c);  // outside the lock: pinning takes milliseconds
    std::lock_guard<std::mutex> lk(mu_);
    try {
      live_[p] = c;
    } catch (...) {
      free_(p);
      throw;
    }
    ++stats_.allocations;
    return p;
  }

  void put(void* p) noexcept {
    if (!p) return;
    std::unique_lock<std::mutex> lk(mu_);
    auto it = live_.find(p);
    if (it == live_.end()) {  // not ours: free it as the allocator would
      lk.unlock();
      free_(p);
      return;
    }
    const size_t c = it->second;
    live_.erase(it);
    bool kept = false;
    if (cached_ + c <= max_cached_) {
      try {
        idle_[c].push_back(p);
        cached_ += c;
        kept = true;
      } catch (...) {
      }
    }
    lk.unlock();
    if (!kept) free_(p);
  }

  // Frees every idle block (the backend's destructor); blocks handed out stay theirs.
  void clear() noexcept {
    std::map<size_t, std::vector<void*>> idle;
    {
      std::lock_guard<std::mutex> lk(mu_);
      idle.swap(idle_);
      cached_ = 0;
    }
    for (auto& [c, blocks] : idle)
      for (void* p : blocks) free_(p);
  }
  // Forgets every block without freeing it (the CUDA runtime is gone at exit).
  void abandon() noexcept {
    std::lock_guard<std::mutex> lk(mu_);
    idle_.clear();
    live_.clear();
    cached_ = 0;
  }

  Stats stats() const {
    std::lock_guard<std::mutex> lk(mu_);
    Stats s = stats_;
    s.cached_bytes = cached_;
    s.live_blocks = live_.size();
    return s;
  }

 private:
  Alloc alloc_;
  Free free_;
  const size_t max_cached_;
  mutable std::mutex mu_;
  std::map<size_t, std::vector<void*>> idle_;  // by class
  std::unordered_map<void*, size_t> live_;     // handed out: its class
  size_t cached_ = 0;
  Stats stats_;
};

}  // namespace amlp::cuda
