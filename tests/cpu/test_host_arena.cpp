// test_host_arena.cpp — the CPU backend's raw memory (framework/cpu/host_arena.h),
// through cpu:0's pool and CpuBackend's test accessors: buffers are 64-byte
// aligned; large blocks are 2 MiB-aligned mappings that the allocating thread
// only maps and the populator (at idle priority) or the writing worker makes
// resident, and the fresh-memory counters say who did; small blocks are carved
// from populated 2 MiB chunks; a kernel writing fresh blocks does not fault;
// freeing a block unmaps its mapping. Moved from tests/core/test_memory.cpp.
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

#include "framework/util/env.h"
#include "framework/cpu/cpu_backend.h"
#include "sanitized.h"
#include "test_util.h"

namespace amlp::testing {
namespace {

::testing::Environment* const kNoBytesInUseAtExit = ::testing::AddGlobalTestEnvironment(new NoBytesInUseAtExit);  // test_util.h

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

// FreshBacking's counters: what accrued between two reads is their
// difference, several pools' their sum, every field of it.
TEST(FreshBacking, DifferencesAndSumsTakeEveryCounter) {
  const FreshBacking a{1.5, 0.5, 100, 2.0, 40}, b{0.5, 0.25, 30, 1.0, 10};
  const FreshBacking d = a - b;
  EXPECT_EQ(d.worker_s, 1.0);
  EXPECT_EQ(d.worker_populate_s, 0.25);
  EXPECT_EQ(d.worker_bytes, 70u);
  EXPECT_EQ(d.populator_s, 1.0);
  EXPECT_EQ(d.populator_bytes, 30u);
  EXPECT_EQ(d.bytes(), 100u);
  FreshBacking sum = b;
  sum += d;
  EXPECT_EQ(sum.worker_s, a.worker_s);
  EXPECT_EQ(sum.worker_populate_s, a.worker_populate_s);
  EXPECT_EQ(sum.worker_bytes, a.worker_bytes);
  EXPECT_EQ(sum.populator_s, a.populator_s);
  EXPECT_EQ(sum.populator_bytes, a.populator_bytes);
  EXPECT_EQ(FreshBacking{}.bytes(), 0u);
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
  EXPECT_EQ(s0.fresh.worker_s, 0.0);
  EXPECT_EQ(s0.fresh.worker_bytes, 0u);
  EXPECT_EQ(s0.fresh.populator_s, 0.0);
  EXPECT_EQ(s0.fresh.populator_bytes, 0u);
  b.hold_populator(true);
  void* p = b.raw_alloc(bytes);
  void* q = b.raw_alloc(bytes);
  void* small = b.raw_alloc(4096);
  ASSERT_NE(p, nullptr);
  ASSERT_NE(q, nullptr);
  ASSERT_NE(small, nullptr);
  EXPECT_EQ(pool.stats().fresh.worker_bytes, 0u) << "mapping a block backs nothing";
  ASSERT_TRUE(b.prepare_write(q));  // the worker, before the populator got to it
  const MemoryStats s1 = pool.stats();
  EXPECT_EQ(s1.fresh.worker_bytes, bytes);
  EXPECT_GT(s1.fresh.worker_populate_s, 0.0);
  EXPECT_GE(s1.fresh.worker_s, s1.fresh.worker_populate_s);  // populating is part of the worker's time
  EXPECT_EQ(s1.fresh.populator_bytes, 0u);
  EXPECT_EQ(s1.fresh.populator_s, 0.0);
  ASSERT_TRUE(b.prepare_write(small));  // its chunk, whole
  const MemoryStats s2 = pool.stats();
  EXPECT_EQ(s2.fresh.worker_bytes, bytes + chunk);
  EXPECT_GT(s2.fresh.worker_s, s1.fresh.worker_s);
  ASSERT_TRUE(b.prepare_write(q));  // resident now: nothing to pay
  const MemoryStats s3 = pool.stats();
  EXPECT_EQ(s3.fresh.worker_bytes, s2.fresh.worker_bytes);
  EXPECT_EQ(s3.fresh.worker_s, s2.fresh.worker_s);
  EXPECT_EQ(s3.fresh.worker_populate_s, s2.fresh.worker_populate_s);
  b.hold_populator(false);
  ASSERT_TRUE(wait_resident(b, p)) << "the populator never populated the block";
  const MemoryStats s4 = pool.stats();
  EXPECT_EQ(s4.fresh.populator_bytes, bytes) << "the populator counts p only (q and the chunk were the worker's)";
  EXPECT_GT(s4.fresh.populator_s, 0.0);
  ASSERT_TRUE(b.prepare_write(p));  // made resident by the populator: the worker pays nothing
  const MemoryStats s5 = pool.stats();
  EXPECT_EQ(s5.fresh.worker_bytes, s2.fresh.worker_bytes);
  EXPECT_EQ(s5.fresh.worker_s, s2.fresh.worker_s);
  b.raw_free(small);
  b.raw_free(p);
  b.raw_free(q);
}

// A worker preparing blocks in allocation order while the populator works
// through the same queue (and, beside it, populates newer blocks ahead):
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
  if (env_settings().populator_normal_priority) GTEST_SKIP() << "ASYNCMLP_POPULATOR_NORMAL=1";
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

}  // namespace
}  // namespace amlp::testing
