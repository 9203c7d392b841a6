// test_segments.cpp — the segment carver (core/memory/segments.h) over a fake device
// allocator: blocks come out of few large segments at consecutive addresses,
// a segment goes back only with its last block, and the pool above it keeps
// its accounting, its budget and its out-of-memory behaviour.
#include <gtest/gtest.h>

#include <cstdint>
#include <iterator>
#include <map>
#include <memory>
#include <vector>

#include "framework/core/memory/memory.h"
#include "framework/core/memory/segments.h"
#include "framework/error.h"

namespace amlp {
namespace {

constexpr size_t MiB = size_t(1) << 20;

// Hands out addresses it never backs (nothing here reads or writes them),
// up to `capacity` bytes at once.
struct FakeDevice : RawAllocator {
  size_t capacity = SIZE_MAX, held = 0;
  uintptr_t next = 0x100000000;
  std::map<void*, size_t> live;
  int allocs = 0, frees = 0, syncs = 0;
  void* raw_alloc(size_t bytes) override {
    if (held + bytes > capacity) return nullptr;
    void* p = reinterpret_cast<void*>(next);
    next += bytes + 64 * MiB;  // segments never adjoin
    live[p] = bytes;
    held += bytes;
    ++allocs;
    return p;
  }
  void raw_free(void* p) noexcept override {
    held -= live.at(p);
    live.erase(p);
    ++frees;
  }
  void before_raw_free() noexcept override { ++syncs; }
};

struct Carver {
  FakeDevice* dev;
  std::unique_ptr<SegmentAllocator> seg;
  Carver() {
    auto d = std::make_unique<FakeDevice>();
    dev = d.get();
    seg = std::make_unique<SegmentAllocator>(std::move(d));
  }
};

char* at(void* p) { return static_cast<char*>(p); }

TEST(Segments, SmallBlocksAreCarvedFromOneTwoMiBSegment) {
  Carver c;
  void* b[5];
  for (void*& p : b) p = c.seg->raw_alloc(512 * 1024);
  EXPECT_EQ(c.dev->allocs, 2);  // four fill the first segment, the fifth opens a second
  EXPECT_EQ(c.dev->live.begin()->second, 2 * MiB);
  for (int i = 1; i < 4; ++i) EXPECT_EQ(at(b[i]), at(b[i - 1]) + 512 * 1024) << "a pointer bump apart";
  EXPECT_EQ(c.seg->stats().segment_bytes, 4 * MiB);
  EXPECT_EQ(c.seg->stats().segments, 2u);
}

TEST(Segments, LargeBlocksShareTwentyMiBSegmentsAndHugeOnesGetTheirOwn) {
  Carver c;
  for (int i = 0; i < 10; ++i) ASSERT_NE(c.seg->raw_alloc(2 * MiB), nullptr);
  EXPECT_EQ(c.dev->allocs, 1);
  EXPECT_EQ(c.dev->live.begin()->second, 20 * MiB);
  void* huge = c.seg->raw_alloc(30 * MiB + 1);
  ASSERT_NE(huge, nullptr);
  EXPECT_EQ(c.dev->allocs, 2);
  EXPECT_EQ(c.dev->live.at(huge), 32 * MiB);  // rounded up to 2 MiB
  c.seg->raw_free(huge);
  EXPECT_EQ(c.dev->frees, 1);
}

TEST(Segments, ASegmentGoesBackWithItsLastBlockOnly) {
  Carver c;
  void* a = c.seg->raw_alloc(MiB);
  void* b = c.seg->raw_alloc(MiB);
  ASSERT_EQ(c.dev->allocs, 1);
  c.seg->raw_free(a);
  EXPECT_EQ(c.dev->frees, 0) << "a block is still carved from it";
  c.seg->raw_free(b);
  EXPECT_EQ(c.dev->frees, 1);
  EXPECT_EQ(c.seg->stats().segment_bytes, 0u);
  EXPECT_NE(c.seg->raw_alloc(MiB), nullptr);  // a fresh segment opens for the next block
  EXPECT_EQ(c.dev->allocs, 2);
}

TEST(Segments, AFullDeviceGivesNullptr) {
  Carver c;
  c.dev->capacity = 2 * MiB;
  EXPECT_NE(c.seg->raw_alloc(MiB), nullptr);
  EXPECT_EQ(c.seg->raw_alloc(3 * MiB), nullptr);  // needs a 20 MiB segment
}

TEST(Segments, ThePoolAboveKeepsItsAccountingAndEmptiesTheSegments) {
  auto d = std::make_unique<FakeDevice>();
  FakeDevice* dev = d.get();
  auto seg = std::make_unique<SegmentAllocator>(std::move(d));
  SegmentAllocator* carver = seg.get();
  {
    Pool pool("fake:0", std::move(seg));
    auto x = pool.allocate(1000);
    auto y = pool.allocate(3000);
    EXPECT_EQ(pool.stats().reserved_bytes, Pool::round(1000) + Pool::round(3000));  // the blocks, as before
    EXPECT_EQ(pool.stats().raw_alloc_count, 2u);
    EXPECT_EQ(dev->allocs, 1);  // one segment behind both
    EXPECT_EQ(carver->stats().segment_bytes, 2 * MiB);
    x.reset(), y.reset();
    EXPECT_EQ(dev->frees, 0);  // cached by the pool
    pool.empty_cache();
    EXPECT_EQ(dev->frees, 1);
    EXPECT_EQ(pool.stats().reserved_bytes, 0u);
  }
}

TEST(Segments, ThePoolsBudgetAndRetryWorkAsBefore) {
  auto d = std::make_unique<FakeDevice>();
  FakeDevice* dev = d.get();
  dev->capacity = 5 * MiB;
  Pool pool("fake:0", std::make_unique<SegmentAllocator>(std::move(d)));
  {
    auto a = pool.allocate(MiB);  // a 2 MiB segment
  }                               // cached
  // A 3 MiB block needs a 20 MiB segment, or at least one of its own size
  // (4 MiB): only once the cache (and with it the small segment) went back
  // does that fit.
  auto big = pool.allocate(3 * MiB);
  EXPECT_NE(big, nullptr);
  EXPECT_EQ(dev->frees, 1);
  EXPECT_EQ(dev->live.begin()->second, 4 * MiB);
  big.reset();
  pool.set_limit(4 * MiB, "--memory-limit");
  try {
    auto too_big = pool.allocate(5 * MiB);
    FAIL() << "allocated past the budget";
  } catch (const OutOfMemory& e) {
    EXPECT_NE(std::string(e.what()).find("--memory-limit"), std::string::npos) << e.what();
  }
}

// The blocks of one d2l step at batch 1024 (512 -> 2048 -> 512 -> 1): about
// 42 MiB in 20 blocks, four of them 8 MiB activations.
const size_t kStepBlocks[] = {8 * MiB, 8 * MiB, 8 * MiB, 8 * MiB, 4 * MiB, 4 * MiB, 2 * MiB, 2 * MiB,
                              4096,    4096,    4096,    4096,    4096,    4096,    4096,    4096,
                              4096,    4096,    8192,    8192};

TEST(Segments, ABacklogOfAHundredStepsCostsFewDeviceCalls) {
  auto d = std::make_unique<FakeDevice>();
  FakeDevice* dev = d.get();
  Pool pool("fake:0", std::make_unique<SegmentAllocator>(std::move(d)));
  std::vector<std::shared_ptr<Storage>> backlog;  // nothing freed: an unsynchronized loop's 100 batches
  size_t bytes = 0;
  for (int step = 0; step < 100; ++step)
    for (size_t b : kStepBlocks) backlog.push_back(pool.allocate(b)), bytes += Pool::round(b);
  EXPECT_EQ(pool.stats().reserved_bytes, bytes) << "the pool counts blocks, not segments";
  EXPECT_EQ(pool.stats().raw_alloc_count, backlog.size()) << "every block was new to the pool";
  EXPECT_LE(dev->allocs, 20) << "geometric segments: O(log N) device calls for N bytes";
  EXPECT_EQ(pool.stats().device_allocs, static_cast<uint64_t>(dev->allocs)) << "the pool reports the device's calls";
  EXPECT_GE(dev->held, bytes);
  EXPECT_LE(dev->held, 2 * bytes) << "a segment is at most as large as what its class held before";
}

TEST(Segments, AGrownSegmentTheDeviceCannotGiveShrinksToTheBaseSize) {
  Carver c;
  for (int i = 0; i < 20; ++i) ASSERT_NE(c.seg->raw_alloc(2 * MiB), nullptr);  // 20 + 20 MiB segments
  ASSERT_EQ(c.dev->allocs, 2);
  c.dev->capacity = c.dev->held + 30 * MiB;  // room for 20 MiB, not the grown 40
  EXPECT_NE(c.seg->raw_alloc(2 * MiB), nullptr);
  EXPECT_EQ(c.dev->allocs, 3);
  EXPECT_EQ(std::prev(c.dev->live.end())->second, 20 * MiB);
  c.dev->capacity = c.dev->held + 3 * MiB;  // only a block-sized segment (2 MiB) fits
  for (int i = 0; i < 9; ++i) ASSERT_NE(c.seg->raw_alloc(2 * MiB), nullptr);  // the 20 MiB one fills
  EXPECT_NE(c.seg->raw_alloc(2 * MiB), nullptr);
  EXPECT_EQ(std::prev(c.dev->live.end())->second, 2 * MiB);
  EXPECT_EQ(c.seg->raw_alloc(2 * MiB), nullptr) << "the device is full";
}

TEST(Segments, AHugeBlockSharesAGrownSegmentOnlyWhenItHoldsItTwice) {
  Carver c;
  for (int i = 0; i < 50; ++i) ASSERT_NE(c.seg->raw_alloc(2 * MiB), nullptr);  // 20+20+40+80 = 160 MiB held
  const int before = c.dev->allocs;
  void* huge = c.seg->raw_alloc(30 * MiB);  // the open segment (80 MiB) has 80 - 10*2 = 60 MiB left
  ASSERT_NE(huge, nullptr);
  EXPECT_EQ(c.dev->allocs, before) << "carved from the open segment";
  EXPECT_EQ(c.dev->live.count(huge), 0u);
  void* huge2 = c.seg->raw_alloc(90 * MiB);  // the next grown segment (160 MiB) would not hold it twice
  ASSERT_NE(huge2, nullptr);
  EXPECT_EQ(c.dev->allocs, before + 1);
  EXPECT_EQ(c.dev->live.at(huge2), 90 * MiB) << "a segment of its own";
}

}  // namespace
}  // namespace amlp
