// test_memory.cpp — memory is held by pending work (docs/design.md §3) and measured
// exactly (§7): k queued training steps hold k times one step's bytes, a
// buffer returns only when no handle and no pending op refers to it, the
// peak is the maximum, the cache is reused, running out is a clean
// OutOfMemory, and nothing leaks.
#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "framework/cpu/cpu_backend.h"
#include "models/mlp.h"
#include "sanitized.h"
#include "test_util.h"

namespace amlp::testing {
namespace {

// After the last test of this binary (or the one test ctest runs in it),
// every tensor is gone: every device's pool must have nothing in use.
class NoBytesInUseAtExit : public ::testing::Environment {
 public:
  void TearDown() override {
    waitall();
    for (DeviceContext* c : live_contexts())
      EXPECT_EQ(c->pool.stats().bytes_in_use, 0u) << "bytes still in use on " << c->device.str() << " at exit";
  }
};
::testing::Environment* const kNoBytesInUseAtExit = ::testing::AddGlobalTestEnvironment(new NoBytesInUseAtExit);

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

TEST(MemoryCpuPool, BuffersAre64ByteAligned) {
  for (int64_t n : {1, 3, 17, 1000, 4097}) {
    Tensor t = empty({n}, Device::cpu(0));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(storage(t)->data()) % 64, 0u) << n << " floats";
  }
}

// --- large CPU blocks: 2 MiB-aligned mappings, populated by the populator thread or, at the
// latest, by the worker as their writer starts ---

cpu::CpuBackend& cpu0_backend() {
  auto* b = dynamic_cast<cpu::CpuBackend*>(context(Device::cpu(0)).backend.get());
  EXPECT_NE(b, nullptr);
  return *b;
}

// How many of the pages of [p, p + len) are resident; -1 when the range is
// not (wholly) mapped.
long resident_pages(const void* p, size_t len) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> vec((len + page - 1) / page);
  if (mincore(const_cast<void*>(p), len, vec.data()) != 0) return -1;
  long n = 0;
  for (unsigned char v : vec) n += v & 1;
  return n;
}

TEST(MemoryCpuPool, LargeBlocksAre2MiBAlignedMappingsResidentWhenTheirWriterRuns) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  empty_cache(Device::cpu(0));  // fresh blocks, not cached ones
  for (size_t bytes : {size_t(2) << 20, (size_t(2) << 20) + 512, size_t(8) << 20, size_t(13) << 20}) {
    Tensor t = full({static_cast<int64_t>(bytes / sizeof(float))}, 0.5f, Device::cpu(0));
    const void* p = storage(t)->data();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % (size_t(2) << 20), 0u) << bytes << " bytes";
    const size_t mapped = cpu0_backend().mapped_bytes(p);
    EXPECT_EQ(mapped, (bytes + page - 1) / page * page) << bytes << " bytes";  // whole pages, no more
    t.wait_to_read();
    EXPECT_TRUE(cpu0_backend().resident(p)) << bytes << " bytes";
    EXPECT_EQ(resident_pages(p, mapped), static_cast<long>(mapped / page)) << bytes << " bytes: not populated";
  }
}

// Whether this kernel knows MADV_POPULATE_WRITE (Linux 5.14): without it the
// backend populates as it allocates, and there is no populator to see.
bool populate_write_supported() {
  const size_t len = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void* m = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return false;
  const bool ok = madvise(m, len, 23 /* MADV_POPULATE_WRITE */) == 0;
  munmap(m, len);
  return ok;
}

// Waits (up to a minute: a loaded VM may back memory slowly) until the
// populator has made p resident.
bool wait_resident(const cpu::CpuBackend& b, const void* p) {
  for (int i = 0; i < 6000 && !b.resident(p); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return b.resident(p);
}

// The frontend only maps a large block (so an unsynchronized loop queues at
// once, as in the book); the populator makes it resident behind it, or the
// worker does as the block's writer starts.
TEST(MemoryCpuPool, TheAllocatingThreadMapsAndThePopulatorPopulates) {
  if (!populate_write_supported()) GTEST_SKIP() << "no MADV_POPULATE_WRITE (Linux < 5.14): blocks are populated as they are allocated";
  std::unique_ptr<Backend> owned = make_cpu_backend(6);  // nothing else allocates through it
  auto& b = dynamic_cast<cpu::CpuBackend&>(*owned);
  const size_t bytes = size_t(8) << 20, page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  b.hold_populator(true);
  void* p = b.raw_alloc(bytes);
  void* q = b.raw_alloc(bytes);
  void* small = b.raw_alloc(4096);  // its chunk too
  ASSERT_NE(p, nullptr);
  ASSERT_NE(q, nullptr);
  ASSERT_NE(small, nullptr);
  EXPECT_EQ(resident_pages(p, bytes), 0) << "the allocating thread populated the block";
  EXPECT_EQ(resident_pages(b.chunk_of(small), size_t(2) << 20), 0) << "the allocating thread populated the chunk";
  EXPECT_FALSE(b.resident(p));
  EXPECT_FALSE(b.resident(small));
  EXPECT_TRUE(b.prepare_write(q));  // the worker, before the populator got to it
  EXPECT_TRUE(b.resident(q));
  EXPECT_EQ(resident_pages(q, bytes), static_cast<long>(bytes / page));
  b.hold_populator(false);
  ASSERT_TRUE(wait_resident(b, p)) << "the populator never populated the block";
  EXPECT_EQ(resident_pages(p, bytes), static_cast<long>(bytes / page));
  ASSERT_TRUE(wait_resident(b, small)) << "the populator never populated the chunk";
  EXPECT_EQ(resident_pages(b.chunk_of(small), size_t(2) << 20), static_cast<long>((size_t(2) << 20) / page));
  b.raw_free(small);
  b.raw_free(p);
  b.raw_free(q);
}

// The fresh-memory counters (HostArena::BackingStats, read through a pool's
// MemoryStats): a block the worker populates before the populator reached it
// adds its bytes and time to the worker's; one already resident adds
// nothing; what the populator makes resident counts as the populator's.
TEST(MemoryCpuPool, TheWorkersBackingOfFreshBlocksIsCountedAndAResidentOneAddsNothing) {
  if (!populate_write_supported()) GTEST_SKIP() << "no MADV_POPULATE_WRITE (Linux < 5.14): blocks are populated as they are allocated";
  std::unique_ptr<Backend> owned = make_cpu_backend(8);  // nothing else allocates through it
  auto& b = dynamic_cast<cpu::CpuBackend&>(*owned);
  Pool pool("cpu:8", std::make_unique<ForwardingAllocator>(&b));  // the path memory_stats() reads
  const size_t bytes = size_t(8) << 20, chunk = size_t(2) << 20;
  const MemoryStats s0 = pool.stats();
  EXPECT_EQ(s0.fresh_worker_s, 0.0);
  EXPECT_EQ(s0.fresh_worker_bytes, 0u);
  EXPECT_EQ(s0.fresh_populator_s, 0.0);
  EXPECT_EQ(s0.fresh_populator_bytes, 0u);
  b.hold_populator(true);
  void* p = b.raw_alloc(bytes);
  void* q = b.raw_alloc(bytes);
  void* small = b.raw_alloc(4096);
  ASSERT_NE(p, nullptr);
  ASSERT_NE(q, nullptr);
  ASSERT_NE(small, nullptr);
  EXPECT_EQ(pool.stats().fresh_worker_bytes, 0u) << "mapping a block backs nothing";
  ASSERT_TRUE(b.prepare_write(q));  // the worker, before the populator got to it
  const MemoryStats s1 = pool.stats();
  EXPECT_EQ(s1.fresh_worker_bytes, bytes);
  EXPECT_GT(s1.fresh_worker_populate_s, 0.0);
  EXPECT_GE(s1.fresh_worker_s, s1.fresh_worker_populate_s);  // populating is part of the worker's time
  EXPECT_EQ(s1.fresh_populator_bytes, 0u);
  EXPECT_EQ(s1.fresh_populator_s, 0.0);
  ASSERT_TRUE(b.prepare_write(small));  // its chunk, whole
  const MemoryStats s2 = pool.stats();
  EXPECT_EQ(s2.fresh_worker_bytes, bytes + chunk);
  EXPECT_GT(s2.fresh_worker_s, s1.fresh_worker_s);
  ASSERT_TRUE(b.prepare_write(q));  // resident now: nothing to pay
  const MemoryStats s3 = pool.stats();
  EXPECT_EQ(s3.fresh_worker_bytes, s2.fresh_worker_bytes);
  EXPECT_EQ(s3.fresh_worker_s, s2.fresh_worker_s);
  EXPECT_EQ(s3.fresh_worker_populate_s, s2.fresh_worker_populate_s);
  b.hold_populator(false);
  ASSERT_TRUE(wait_resident(b, p)) << "the populator never populated the block";
  const MemoryStats s4 = pool.stats();
  EXPECT_EQ(s4.fresh_populator_bytes, bytes) << "the populator counts p only (q and the chunk were the worker's)";
  EXPECT_GT(s4.fresh_populator_s, 0.0);
  ASSERT_TRUE(b.prepare_write(p));  // made resident by the populator: the worker pays nothing
  const MemoryStats s5 = pool.stats();
  EXPECT_EQ(s5.fresh_worker_bytes, s2.fresh_worker_bytes);
  EXPECT_EQ(s5.fresh_worker_s, s2.fresh_worker_s);
  b.raw_free(small);
  b.raw_free(p);
  b.raw_free(q);
}

// A worker preparing blocks in allocation order while the populator works
// through the same queue (and, waiting for it, populates newer blocks ahead):
// every block ends resident, and what each writer wrote stays written.
TEST(MemoryCpuPool, BlocksPreparedAsThePopulatorRunsEndResidentWithTheirContents) {
  std::unique_ptr<Backend> owned = make_cpu_backend(4);
  auto& b = dynamic_cast<cpu::CpuBackend&>(*owned);
  const size_t bytes = size_t(4) << 20, page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  std::vector<unsigned char*> blocks;
  for (int i = 0; i < 32; ++i) {
    blocks.push_back(static_cast<unsigned char*>(b.raw_alloc(bytes)));
    ASSERT_NE(blocks.back(), nullptr);
  }
  for (size_t i = 0; i < blocks.size(); ++i) {  // as a worker would: prepare, then the kernel writes
    ASSERT_TRUE(b.prepare_write(blocks[i])) << i;
    EXPECT_TRUE(b.resident(blocks[i])) << i;
    std::memset(blocks[i], static_cast<int>(i + 1), bytes);
  }
  for (size_t i = 0; i < blocks.size(); ++i) {
    ASSERT_TRUE(wait_resident(b, blocks[i])) << i;
    EXPECT_EQ(resident_pages(blocks[i], bytes), static_cast<long>(bytes / page)) << i;
    size_t changed = 0;
    for (size_t k = 0; k < bytes; k += 997) changed += blocks[i][k] != static_cast<unsigned char>(i + 1);
    EXPECT_EQ(changed, 0u) << "block " << i << " lost what was written";
  }
  for (unsigned char* p : blocks) b.raw_free(p);
}

// Obtaining memory is not the frontend's work: the thread that allocates
// (queues) large blocks only maps them, so an unsynchronized loop queues at
// once (the book's run 2). Its own page faults say whether it populated any:
// 32 MiB at 2 MiB a fault would be 16, at 4 KiB 8192.
TEST(MemoryCpuPool, TheAllocatingThreadDoesNotPopulateLargeBlocks) {
  if (!populate_write_supported()) GTEST_SKIP() << "no MADV_POPULATE_WRITE (Linux < 5.14): blocks are populated as they are allocated";
  full({4 << 20 >> 2}, 1.f, Device::cpu(0)).wait_to_read();  // the populator thread started
  empty_cache(Device::cpu(0));
  std::vector<Tensor> keep;
  rusage before{}, after{};
  {
    PausedQueue paused(Device::cpu(0));
    getrusage(RUSAGE_THREAD, &before);
    for (int i = 0; i < 8; ++i) keep.push_back(full({4 << 20 >> 2}, 3.f, Device::cpu(0)));  // 8 x 4 MiB, fresh
    getrusage(RUSAGE_THREAD, &after);
  }
  const long faults = after.ru_minflt - before.ru_minflt;
  EXPECT_EQ(keep.back().to_host()[777], 3.f);
  if (kAddressSanitized || kThreadSanitized)  // each fresh mapping's shadow is written on this thread
    GTEST_SKIP() << "checked in the release build: the sanitizer's shadow of the fresh mappings faulted " << faults
                 << " times on the allocating thread";
  EXPECT_LT(faults, 8) << "the allocating thread populated the blocks it queued";
}

// The populator takes only what the other threads leave of the cores
// (SCHED_IDLE): beside the kernels' threads it would slow them by as much as
// it saves. Found by its name among the process's threads.
TEST(MemoryCpuPool, ThePopulatorRunsAtIdlePriority) {
  if (!populate_write_supported()) GTEST_SKIP() << "no MADV_POPULATE_WRITE (Linux < 5.14): no populator thread";
  if (std::getenv("ASYNCMLP_POPULATOR_NORMAL")) GTEST_SKIP() << "ASYNCMLP_POPULATOR_NORMAL is set";
  empty_cache(Device::cpu(0));
  full({4 << 20 >> 2}, 1.f, Device::cpu(0)).wait_to_read();  // a fresh large block: the populator started
  int found = 0, idle = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(e.path() / "comm");
    std::string name;
    std::getline(comm, name);
    if (name != "amlp-populator") continue;
    ++found;
    idle += sched_getscheduler(static_cast<pid_t>(std::stol(e.path().filename().string()))) == SCHED_IDLE;
  }
  ASSERT_GE(found, 1) << "no thread named amlp-populator";
  EXPECT_EQ(idle, found) << "a populator thread at another priority than SCHED_IDLE";
}

// A block freed before the populator reached it, and a new one mapped at the
// same address and written meanwhile: the stale job neither marks the new
// mapping resident on its behalf nor changes what was written there.
TEST(MemoryCpuPool, APopulateLeftFromAFreedBlockLeavesANewBlocksContents) {
  if (!populate_write_supported()) GTEST_SKIP() << "no MADV_POPULATE_WRITE (Linux < 5.14): blocks are populated as they are allocated";
  std::unique_ptr<Backend> owned = make_cpu_backend(5);
  auto& b = dynamic_cast<cpu::CpuBackend&>(*owned);
  const size_t bytes = size_t(4) << 20;
  b.hold_populator(true);
  void* p = b.raw_alloc(bytes);
  ASSERT_NE(p, nullptr);
  b.raw_free(p);
  void* q = b.raw_alloc(bytes);  // often at p's address
  ASSERT_NE(q, nullptr);
  ASSERT_TRUE(b.prepare_write(q));
  std::memset(q, 7, bytes);  // its writer ran
  b.hold_populator(false);
  void* r = b.raw_alloc(bytes);  // queued behind both: once it is resident, both jobs were done
  ASSERT_TRUE(wait_resident(b, r));
  const auto* c = static_cast<const unsigned char*>(q);
  size_t changed = 0;
  for (size_t i = 0; i < bytes; ++i) changed += c[i] != 7;
  EXPECT_EQ(changed, 0u) << "populating changed a written block";
  EXPECT_TRUE(b.resident(q));
  b.raw_free(q);
  b.raw_free(r);
}

TEST(MemoryCpuPool, AKernelWritingAFreshLargeBlockDoesNotFault) {
  full({4 << 20 >> 2}, 1.f, Device::cpu(0)).wait_to_read();  // the populator thread started (its stack faults)
  empty_cache(Device::cpu(0));
  waitall();
  const uint64_t before = process_minor_faults();
  Tensor t = full({16 << 20 >> 2}, 1.5f, Device::cpu(0));  // 16 MiB: 4096 faults at 4 KiB a page if the worker touched it
  t.wait_to_read();
  const uint64_t faults = process_minor_faults() - before;
  EXPECT_EQ(t.to_host()[12345], 1.5f);
  if (kThreadSanitized)  // the fill kernel touches ~4 shadow pages per page: 16384 either way
    GTEST_SKIP() << "checked in the release and ASan builds: ThreadSanitizer's shadow faulted " << faults << " times";
  uint64_t allowed = 64;
  if (kAddressSanitized) allowed += 2 * ((16 << 20) / 8 / 4096);  // the shadow of the block (1/8 of it, in 4 KiB pages)
  EXPECT_LT(faults, allowed) << "the worker faulted on a fresh 16 MiB block";  // unpopulated: 4096
}

// Blocks under 2 MiB are carved from 2 MiB chunks, populated like a large
// block (by the populator, or by the worker as a block's writer starts):
// resident before a kernel touches them, 64-byte aligned, packed; a chunk
// whose blocks were all freed is unmapped, and the current one is carved
// again from its start.
TEST(MemoryCpuPool, SmallBlocksAreCarvedFromPopulatedChunks) {
  std::unique_ptr<Backend> owned = make_cpu_backend(8);  // nothing else allocates through it
  auto& b = dynamic_cast<cpu::CpuBackend&>(*owned);
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  std::vector<void*> blocks;
  for (size_t bytes : {size_t(512), size_t(4096), size_t(1) << 20, size_t(512)}) {
    void* p = b.raw_alloc(bytes);
    ASSERT_NE(p, nullptr) << bytes;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
    EXPECT_EQ(b.mapped_bytes(p), 0u) << bytes << " bytes: a mapping of its own";
    ASSERT_NE(b.chunk_of(p), nullptr) << bytes;
    ASSERT_TRUE(b.prepare_write(p)) << bytes;  // as the worker does before the block's writer runs
    EXPECT_TRUE(b.resident(p)) << bytes;
    const uintptr_t off = reinterpret_cast<uintptr_t>(p) - reinterpret_cast<uintptr_t>(b.chunk_of(p));
    const char* first_page = static_cast<const char*>(b.chunk_of(p)) + off / page * page;
    EXPECT_EQ(resident_pages(first_page, (off % page + bytes + page - 1) / page * page),
              static_cast<long>((off % page + bytes + page - 1) / page))
        << bytes << " bytes: not populated";
    blocks.push_back(p);
  }
  EXPECT_EQ(b.chunk_count(), 1u);  // 512 + 4096 + 1 MiB + 512 fit in one chunk
  const void* first = b.chunk_of(blocks[0]);
  EXPECT_EQ(static_cast<const char*>(blocks[1]) - static_cast<const char*>(blocks[0]), 512);  // packed
  void* spill = b.raw_alloc(size_t(1) << 20);  // no room left in the first chunk: a second one
  ASSERT_NE(spill, nullptr);
  EXPECT_NE(b.chunk_of(spill), first);
  EXPECT_EQ(b.chunk_count(), 2u);
  for (void* p : blocks) b.raw_free(p);  // the first chunk is empty and not current: unmapped
  EXPECT_EQ(b.chunk_count(), 1u);
  EXPECT_EQ(resident_pages(first, size_t(2) << 20), -1) << "the empty chunk is still mapped";
  const void* second = b.chunk_of(spill);
  b.raw_free(spill);  // the current chunk, empty: kept and carved again from its start
  EXPECT_EQ(b.chunk_count(), 1u);
  void* again = b.raw_alloc(512);
  EXPECT_EQ(again, second);
  b.raw_free(again);
}

// What the chunks are for: an unsynchronized loop takes fresh small blocks
// for every batch, and the worker that writes them must not fault page by page.
TEST(MemoryCpuPool, AKernelWritingManyFreshSmallBlocksDoesNotFault) {
  empty_cache(Device::cpu(0));
  waitall();
  std::vector<Tensor> keep;  // all alive at once: nothing is reused from the cache
  uint64_t before;
  {
    PausedQueue paused(Device::cpu(0));
    for (int i = 0; i < 64; ++i) keep.push_back(full({(256 << 10) >> 2}, 2.f, Device::cpu(0)));  // 64 x 256 KiB
    before = process_minor_faults();  // allocated (and populated) already; the kernels have not run
  }
  waitall();
  const uint64_t faults = process_minor_faults() - before;
  EXPECT_EQ(keep.back().to_host()[1000], 2.f);
  if (kThreadSanitized)
    GTEST_SKIP() << "checked in the release and ASan builds: ThreadSanitizer's shadow faulted " << faults << " times";
  uint64_t allowed = 64;
  if (kAddressSanitized) allowed += 2 * ((16 << 20) / 8 / 4096);
  EXPECT_LT(faults, allowed) << "the worker faulted writing 16 MiB of fresh small blocks";  // from malloc: 4096
}

TEST(MemoryCpuPool, FreeingALargeBlockUnmapsItsWholeMapping) {
  // A backend of its own (nothing else allocates through it), made by the
  // library: its layout depends on the library's build settings.
  std::unique_ptr<Backend> owned = make_cpu_backend(7);
  auto& b = dynamic_cast<cpu::CpuBackend&>(*owned);
  const size_t bytes = (size_t(6) << 20) + 512, page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void* p = b.raw_alloc(bytes);
  ASSERT_NE(p, nullptr);
  const size_t len = b.mapped_bytes(p);
  ASSERT_EQ(len, (bytes + page - 1) / page * page);
  std::memset(p, 7, bytes);
  EXPECT_EQ(resident_pages(p, len), static_cast<long>(len / page));
  const size_t rss = process_rss_bytes();
  b.raw_free(p);
  EXPECT_EQ(b.mapped_bytes(p), 0u);
  // Nothing else maps memory in between (the worker is idle): the range is gone, and so are its pages.
  EXPECT_EQ(resident_pages(p, len), -1) << "still mapped after raw_free";
  EXPECT_EQ(errno, ENOMEM);
  EXPECT_LE(process_rss_bytes() + (size_t(4) << 20), rss) << "RSS did not drop by the block";

  // Through a pool: the cache keeps it, empty_cache hands it back.
  Pool pool("cpu:7", std::make_unique<ForwardingAllocator>(&b));
  void* q = nullptr;
  {
    auto s = pool.allocate(bytes);
    q = s->data();
    EXPECT_EQ(b.mapped_bytes(q), len);
  }
  EXPECT_EQ(b.mapped_bytes(q), len);  // cached
  pool.empty_cache();
  EXPECT_EQ(b.mapped_bytes(q), 0u);
  EXPECT_EQ(resident_pages(q, len), -1);
  EXPECT_EQ(pool.stats().reserved_bytes, 0u);
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
