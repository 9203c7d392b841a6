// block_cache.h — memory for a container that one lock guards, reused
// instead of freed: a queue's pending ops (queue.h) take and give back the
// same few blocks every op, so a steady queue calls no allocator.
//
//   BlockCache cache;                                   // declared before the container
//   std::deque<Op, BlockCache::Allocator<Op>> q{BlockCache::Allocator<Op>(&cache)};
//
// Every allocation and deallocation of the container happens under the lock
// that guards it, so the cache needs none of its own.
#pragma once
#include <cstddef>
#include <new>
#include <utility>
#include <vector>

namespace amlp {

class BlockCache {
 public:
  static constexpr size_t kKeep = 64;  // blocks kept for reuse; more are freed
  BlockCache() { free_.reserve(kKeep); }
  ~BlockCache() {
    for (const auto& [bytes, p] : free_) ::operator delete(p);
  }
  BlockCache(const BlockCache&) = delete;
  BlockCache& operator=(const BlockCache&) = delete;

  void* take(size_t bytes) {
    for (size_t i = free_.size(); i-- > 0;)
      if (free_[i].first == bytes) {
        void* p = free_[i].second;
        free_[i] = free_.back();
        free_.pop_back();
        return p;
      }
    return ::operator new(bytes);
  }
  void give(void* p, size_t bytes) noexcept {
    if (free_.size() < kKeep) free_.emplace_back(bytes, p);
    else ::operator delete(p);
  }

  template <class T>
  struct Allocator {
    using value_type = T;
    explicit Allocator(BlockCache* c) : cache(c) {}
    template <class U>
    Allocator(const Allocator<U>& o) : cache(o.cache) {}  // NOLINT: rebinding
    T* allocate(size_t n) { return static_cast<T*>(cache->take(n * sizeof(T))); }
    void deallocate(T* p, size_t n) noexcept { cache->give(p, n * sizeof(T)); }
    template <class U>
    bool operator==(const Allocator<U>& o) const { return cache == o.cache; }
    template <class U>
    bool operator!=(const Allocator<U>& o) const { return cache != o.cache; }
    BlockCache* cache;
  };

 private:
  std::vector<std::pair<size_t, void*>> free_;  // (bytes, block)
};

}  // namespace amlp
