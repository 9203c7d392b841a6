// Covers framework/core/memory/memory.cpp and framework/core/runtime.cpp (process_minor_faults):
// memory is held by pending work (docs/design.md §3) and measured exactly
// (§7): k queued training steps hold k times one step's bytes, a buffer
// returns only when no handle and no pending op refers to it, the peak is the
// maximum, the cache is reused, running out is a clean OutOfMemory, and
// nothing leaks; the process's RSS and page faults are read. The CPU arena's
// own tests are tests/cpu/test_host_arena.cpp.
#include <string>
#include <vector>

#include "models/mlp.h"
#include "test_util.h"

namespace amlp::testing {
namespace {

::testing::Environment* const kNoBytesInUseAtExit = ::testing::AddGlobalTestEnvironment(new NoBytesInUseAtExit);  // test_util.h

class Memory : public DeviceTest {
 protected:
  size_t in_use() { return memory_stats(dev()).bytes_in_use; }
};

// A small d2l-shaped model with fixed data, initialised, without gradients yet.
struct SmallTraining {
  static constexpr int64_t kBatch = 8;
  std::unique_ptr<Sequential> net = models::make_mlp(models::LayerSpec{{32, 16}}, 1);
  Tensor x, y;
  std::unique_ptr<SGD> sgd;

  explicit SmallTraining(Device d) {
    manual_seed(5);
    x = randn({kBatch, 12}, d);
    y = ones({kBatch}, d);
    {
      NoGradGuard ng;
      (*net)(x);  // deferred initialisation only: no gradient exists yet
    }
    sgd = std::make_unique<SGD>(net->parameters(), 0.01f);
  }
  // Forward, backward, update; every frontend handle is dropped on return.
  void step() {
    Tensor loss = l2_loss((*net)(x), y);
    loss.backward();
    sgd->step(kBatch);
  }
  size_t gradient_bytes() {
    size_t b = 0;
    for (Parameter* p : net->parameters()) b += Pool::round(p->value.nbytes());
    return b;
  }
};

TEST_P(Memory, QueuedStepsHoldKTimesOneStep) {
  const size_t before_everything = in_use();
  {
    SmallTraining t(dev());
    waitall();
    const size_t base = in_use();
    size_t one_step = 0;
    for (int k = 1; k <= 4; ++k) {
      SCOPED_TRACE(std::to_string(k) + " steps queued");
      {
        PausedQueue paused(dev());
        for (int i = 0; i < k; ++i) t.step();
        // Nothing has run, so everything every step allocated is still held
        // by its pending ops. (Each step's backward also lets go of the
        // previous gradients, which no pending op holds any more.)
        const size_t held = in_use() - base;
        if (k == 1) {
          one_step = held;
          EXPECT_GT(one_step, t.gradient_bytes());
        }
        // Exact, in fact; one block of slack.
        EXPECT_NEAR(static_cast<double>(held), static_cast<double>(k * one_step), Pool::kRound);
        EXPECT_GT(queue_stats(dev()).depth, 0u);
      }
      waitall();
      // Drained: only the gradients the parameters keep remain.
      EXPECT_EQ(in_use() - base, t.gradient_bytes());
    }
  }
  EXPECT_EQ(in_use(), before_everything) << "bytes leaked by a training run";
}

TEST_P(Memory, BufferReturnsOnlyWhenNoHandleAndNoPendingOpRefersToIt) {
  const size_t base = in_use();
  const size_t bytes = Pool::round(1000 * sizeof(float));
  Tensor kept;
  {
    Tensor a = full({1000}, 1.f, dev());
    a.wait_to_read();  // written; from now on only a reader can pin it
    PausedQueue paused(dev());
    kept = add_scalar(a, 1.f);
    a = Tensor();  // the handle goes; the pending add_scalar still reads it
    EXPECT_EQ(in_use() - base, 2 * bytes) << "a buffer a pending op reads was released";
    full({1000}, 5.f, dev());  // its handle dies at once; the pending fill still writes it
    EXPECT_EQ(in_use() - base, 3 * bytes) << "a buffer a pending op writes was released";
  }
  waitall();
  EXPECT_EQ(in_use() - base, bytes) << "a finished op's input was not released, or a live handle's output was";
  EXPECT_EQ(kept.to_host(), std::vector<float>(1000, 2.f));
  kept = Tensor();
  EXPECT_EQ(in_use(), base);
}

TEST_P(Memory, PeakIsTheMaximumObserved) {
  reset_peaks(dev());
  const size_t base = in_use();
  EXPECT_EQ(memory_stats(dev()).peak_bytes, base);
  size_t max_seen = base;
  auto observe = [&] { max_seen = std::max(max_seen, in_use()); };
  {
    Tensor a = empty({1000}, dev());  // empty() queues nothing: no worker frees in between
    observe();
    Tensor b = empty({3000}, dev());
    observe();
    a = Tensor();
    observe();
    Tensor c = empty({500}, dev());
    observe();
    EXPECT_EQ(memory_stats(dev()).peak_bytes, max_seen);
  }
  observe();
  EXPECT_EQ(max_seen, base + Pool::round(4000) + Pool::round(12000));
  EXPECT_EQ(memory_stats(dev()).peak_bytes, max_seen);
  EXPECT_EQ(in_use(), base);
  reset_peaks(dev());
  EXPECT_EQ(memory_stats(dev()).peak_bytes, base);
}

TEST_P(Memory, CachedBlocksAreReusedInSteadyState) {
  SmallTraining t(dev());
  for (int i = 0; i < 2; ++i) {  // the first steps fill the cache
    t.step();
    waitall();
  }
  const MemoryStats warm = memory_stats(dev());
  for (int i = 0; i < 6; ++i) {
    t.step();
    waitall();
  }
  const MemoryStats later = memory_stats(dev());
  EXPECT_EQ(later.raw_alloc_count, warm.raw_alloc_count) << "steady-state steps still call the device allocator";
  EXPECT_EQ(later.reserved_bytes, warm.reserved_bytes);
  EXPECT_GT(later.alloc_count, warm.alloc_count);
  EXPECT_EQ(later.alloc_count - warm.alloc_count, later.free_count - warm.free_count);
}

TEST_P(Memory, OutOfMemoryIsCleanAndThePoolRecovers) {
  Pool& pool = context(dev()).pool;
  struct LiftLimit {
    Pool& p;
    ~LiftLimit() { p.set_limit(0); }
  } lift{pool};
  pool.empty_cache();  // a cached block of the size asked for would be served without new memory
  pool.set_limit(pool.stats().reserved_bytes + (1 << 20));  // 1 MiB of headroom
  const int64_t n = 1 << 20;                                 // 4 MiB of floats
  const size_t bytes = static_cast<size_t>(n) * sizeof(float);
  const uint64_t pushed = queue_stats(dev()).pushed;
  try {
    full({n}, 1.f, dev());
    ADD_FAILURE() << "a request past the limit succeeded";
  } catch (const OutOfMemory& e) {
    EXPECT_EQ(e.requested, bytes);
    EXPECT_NE(std::string(e.what()).find(std::to_string(bytes)), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(dev().str()), std::string::npos) << e.what();
  }
  EXPECT_EQ(queue_stats(dev()).pushed, pushed) << "an op that could not allocate was queued";
  Tensor small = full({16}, 1.f, dev());  // usable under the limit
  EXPECT_EQ(sum(small).item(), 16.f);
  pool.set_limit(0);
  Tensor big = full({n}, 1.f, dev());  // and past it once lifted
  EXPECT_EQ(sum(big).item(), static_cast<float>(n));
}

INSTANTIATE_TEST_SUITE_P(Devices, Memory, ::testing::ValuesIn(test_devices()), device_name);

// --- pools on their own ---------------------------------------------------------

struct CountingAllocator : RawAllocator {
  struct Counts {
    int allocs = 0, frees = 0;
    long long live_bytes = 0;
    std::unordered_map<void*, size_t> sizes;
  };
  explicit CountingAllocator(Counts* c) : c_(c) {}
  void* raw_alloc(size_t bytes) override {
    void* p = std::aligned_alloc(64, bytes);
    ++c_->allocs;
    c_->live_bytes += static_cast<long long>(bytes);
    c_->sizes[p] = bytes;
    return p;
  }
  void raw_free(void* p) noexcept override {
    ++c_->frees;
    c_->live_bytes -= static_cast<long long>(c_->sizes[p]);
    c_->sizes.erase(p);
    std::free(p);
  }
  Counts* c_;
};

TEST(MemoryStandalonePool, CountsReusesAndFreesEverythingItRawAllocated) {
  CountingAllocator::Counts counts;
  {
    Pool pool("counting", std::make_unique<CountingAllocator>(&counts));
    auto a = pool.allocate(100), b = pool.allocate(5000), c = pool.allocate(100);
    MemoryStats s = pool.stats();
    EXPECT_EQ(s.bytes_in_use, 512u + 5120u + 512u);  // rounded to Pool::kRound
    EXPECT_EQ(s.reserved_bytes, s.bytes_in_use);
    EXPECT_EQ(s.raw_alloc_count, 3u);
    EXPECT_EQ(s.bytes_allocated_total, s.bytes_in_use);
    a.reset();
    auto d = pool.allocate(200);  // same rounded size: served from the cache
    s = pool.stats();
    EXPECT_EQ(s.raw_alloc_count, 3u);
    EXPECT_EQ(s.alloc_count, 4u);
    EXPECT_EQ(s.free_count, 1u);
    EXPECT_EQ(counts.allocs, 3);
    b.reset();
    c.reset();
    d.reset();
    s = pool.stats();
    EXPECT_EQ(s.bytes_in_use, 0u);
    EXPECT_EQ(s.reserved_bytes, 512u + 5120u + 512u);  // cached, not returned yet
    EXPECT_EQ(s.peak_bytes, 512u + 5120u + 512u);
    EXPECT_EQ(counts.frees, 0);
    pool.set_limit(1024);
    EXPECT_THROW(pool.allocate(4096), OutOfMemory);  // the cache is released first, still too big
    EXPECT_EQ(counts.frees, 3);
    pool.set_limit(0);
    auto e = pool.allocate(4096);  // recovers
    EXPECT_EQ(pool.stats().bytes_in_use, 4096u);
  }  // e died first; the pool's destructor hands back every cached block
  EXPECT_EQ(counts.allocs, counts.frees);
  EXPECT_EQ(counts.live_bytes, 0);
}

TEST(ProcessMemory, MinorFaultsCountFreshPages) {
  const uint64_t before = process_minor_faults();
  std::vector<char> touched(16 << 20, 1);  // 16 MiB of fresh pages (4 KiB or 2 MiB ones)
  EXPECT_GT(process_minor_faults(), before) << static_cast<int>(touched[12345]);
}

TEST(ProcessMemory, ResidentSetSizeIsRead) {
  const size_t rss = process_rss_bytes();
  EXPECT_GT(rss, 0u);
  std::vector<char> touched(64 << 20, 1);  // 64 MiB of fresh, touched pages
  EXPECT_GT(process_rss_bytes(), rss + (32 << 20)) << static_cast<int>(touched[12345]);
}

}  // namespace
}  // namespace amlp::testing
