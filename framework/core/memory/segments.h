// segments.h — fresh device memory at the price of a pointer bump: a
// RawAllocator that takes large segments from the device and carves the
// pool's blocks out of them (PyTorch's caching allocator does the same: 2 MiB
// segments for small blocks, 20 MiB for large ones, a block of its own above).
//
// The pool (memory.h) still caches blocks by exact size and counts them as
// before — its reserved bytes, budget and out-of-memory message are the
// blocks'; the segments' own total (their tails not carved yet included) is
// reported beside it by stats(). A segment goes back to the device when every
// block carved from it did (the pool's empty_cache). Nothing here touches a
// device: it is tested with a fake upstream allocator.
//
//   Pool pool("cuda:0", std::make_unique<SegmentAllocator>(std::move(device_raw)));
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "framework/core/memory/memory.h"

namespace amlp {

class SegmentAllocator final : public RawAllocator {
 public:
  static constexpr size_t kSmallBlock = size_t(1) << 20;      // blocks up to this: 2 MiB segments
  static constexpr size_t kSmallSegment = size_t(2) << 20;
  static constexpr size_t kLargeBlock = size_t(10) << 20;     // up to this: 20 MiB segments
  static constexpr size_t kLargeSegment = size_t(20) << 20;
  static constexpr size_t kHugeRound = size_t(2) << 20;       // larger: a segment of its own, rounded
  static constexpr size_t kAlign = 512;                        // Pool::kRound
  static constexpr size_t kMaxSegment = size_t(1) << 30;        // the geometric growth's cap

  explicit SegmentAllocator(std::unique_ptr<RawAllocator> upstream) : up_(std::move(upstream)) {}
  ~SegmentAllocator() override;  // frees the segments still held (their blocks came back)

  void* raw_alloc(size_t bytes) override;  // nullptr when the device has no segment to give
  std::string why_failed() const override { return up_->why_failed(); }
  void raw_free(void* p) noexcept override;
  void before_raw_free() noexcept override { up_->before_raw_free(); }
  bool host_memory() const override { return up_->host_memory(); }
  bool prepare_write(void* p) noexcept override { return up_->prepare_write(p); }
  int64_t device_allocs() const override;  // the segments taken, ever
  void add_fresh_stats(MemoryStats& s) const override { up_->add_fresh_stats(s); }

  struct Stats {
    size_t segment_bytes = 0;  // what the device gave (every segment, carved or not)
    size_t carved_bytes = 0;   // carved from live segments (a block given back counts until its segment goes)
    uint64_t segments = 0;     // live segments
    uint64_t upstream_allocs = 0, upstream_frees = 0;
  };
  Stats stats() const;

 private:
  enum Class { kSmall, kLarge, kClasses };
  struct Segment {
    size_t bytes;
    size_t used = 0;  // the bump offset
    size_t live = 0;  // blocks carved and not given back
    int cls = kClasses;  // the class it was opened for (kClasses: one huge block's own)
  };
  Segment* open_segment_locked(size_t seg_bytes, int cls, char*& base);  // a new one from upstream, or nullptr
  // The next segment of class c for a block of b bytes: the grown size first,
  // then the base size, then just the block (nullptr: the device is full).
  Segment* grow_locked(Class c, size_t b, char*& base);

  std::unique_ptr<RawAllocator> up_;
  mutable std::mutex mu_;
  std::map<uintptr_t, Segment> segments_;  // by base address
  uintptr_t open_[kClasses] = {0, 0};      // each class's segment being carved (0: none)
  size_t class_bytes_[kClasses] = {0, 0};  // what each class's live segments hold
  Stats stats_;
};

}  // namespace amlp
