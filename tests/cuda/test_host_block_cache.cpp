// test_host_block_cache.cpp — the pinned-block cache behind the CUDA
// backend's alloc_host/free_host (cuda/host_block_cache.h), with a fake
// allocator: a size is allocated once and then reused, classes are powers of
// two, the cap frees what would exceed it, and clear() frees what is idle.
// Runs on any machine; CudaQueue.AsyncCopiesPinMemoryOnceNotPerCall checks the
// backend's use of it on a GPU.
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <thread>
#include <vector>

#include "framework/cuda/host_block_cache.h"

namespace amlp::cuda {
namespace {

struct FakeHeap {
  std::set<void*> live;
  int allocs = 0, frees = 0;
  HostBlockCache::Alloc alloc() {
    return [this](size_t bytes) {
      void* p = std::malloc(bytes);
      live.insert(p);
      ++allocs;
      return p;
    };
  }
  HostBlockCache::Free free() {
    return [this](void* p) {
      EXPECT_EQ(live.erase(p), 1u) << "freed twice, or never allocated";
      std::free(p);
      ++frees;
    };
  }
};

TEST(HostBlockCache, ASizeIsAllocatedOnceThenReused) {
  FakeHeap heap;
  HostBlockCache cache(heap.alloc(), heap.free(), size_t(1) << 30);
  for (int i = 0; i < 100; ++i) {
    void* p = cache.get(4);
    ASSERT_NE(p, nullptr);
    cache.put(p);
  }
  EXPECT_EQ(heap.allocs, 1);
  EXPECT_EQ(heap.frees, 0);
  const HostBlockCache::Stats s = cache.stats();
  EXPECT_EQ(s.allocations, 1u);
  EXPECT_EQ(s.reuses, 99u);
  EXPECT_EQ(s.live_blocks, 0u);
  EXPECT_EQ(s.cached_bytes, size_t(4) << 10);
}

TEST(HostBlockCache, ClassesArePowersOfTwoFrom4KiB) {
  EXPECT_EQ(HostBlockCache::size_class(1), size_t(4096));
  EXPECT_EQ(HostBlockCache::size_class(4096), size_t(4096));
  EXPECT_EQ(HostBlockCache::size_class(4097), size_t(8192));
  EXPECT_EQ(HostBlockCache::size_class((size_t(1) << 20) + 1), size_t(2) << 20);
  FakeHeap heap;
  HostBlockCache cache(heap.alloc(), heap.free(), size_t(1) << 30);
  void* a = cache.get(5000);  // class 8 KiB
  cache.put(a);
  EXPECT_EQ(cache.get(8000), a) << "a block serves any request of its class";
  void* b = cache.get(3000);  // another class, and the 8 KiB one is in use
  EXPECT_NE(b, a);
  EXPECT_EQ(heap.allocs, 2);
  cache.put(a);
  cache.put(b);
}

TEST(HostBlockCache, BlocksInUseAtOnceAreDistinct) {
  FakeHeap heap;
  HostBlockCache cache(heap.alloc(), heap.free(), size_t(1) << 30);
  std::set<void*> seen;
  std::vector<void*> held;
  for (int i = 0; i < 8; ++i) held.push_back(cache.get(100));
  for (void* p : held) EXPECT_TRUE(seen.insert(p).second);
  for (void* p : held) cache.put(p);
  held.clear();
  for (int i = 0; i < 8; ++i) {
    held.push_back(cache.get(100));
    EXPECT_EQ(seen.count(held.back()), 1u) << "reused, not made anew";
  }
  EXPECT_EQ(heap.allocs, 8);
  for (void* p : held) cache.put(p);  // handed back, so the cache frees them all
}

TEST(HostBlockCache, IdleBytesPastTheCapAreFreedAndClearFreesTheRest) {
  FakeHeap heap;
  HostBlockCache cache(heap.alloc(), heap.free(), size_t(16) << 10);  // four 4 KiB blocks
  std::vector<void*> held;
  for (int i = 0; i < 6; ++i) held.push_back(cache.get(1));
  for (void* p : held) cache.put(p);
  EXPECT_EQ(heap.frees, 2);
  EXPECT_EQ(cache.stats().cached_bytes, size_t(16) << 10);
  cache.clear();
  EXPECT_EQ(heap.frees, 6);
  EXPECT_TRUE(heap.live.empty());
}

TEST(HostBlockCache, PutFromOtherThreadsIsSafe) {
  FakeHeap heap;
  HostBlockCache cache(heap.alloc(), heap.free(), size_t(1) << 30);
  std::vector<void*> held;
  for (int i = 0; i < 64; ++i) held.push_back(cache.get(64));
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&, t] {
      for (int i = t; i < 64; i += 4) cache.put(held[i]);
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(cache.stats().live_blocks, 0u);
  EXPECT_EQ(cache.stats().cached_bytes, size_t(64) * 4096);
  cache.clear();
  EXPECT_TRUE(heap.live.empty());
}

}  // namespace
}  // namespace amlp::cuda
