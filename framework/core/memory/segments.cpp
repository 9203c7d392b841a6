// segments.cpp — carving the pool's blocks out of device segments (segments.h).
#include "framework/core/memory/segments.h"

#include <algorithm>

namespace amlp {

namespace {

constexpr size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

}  // namespace

SegmentAllocator::~SegmentAllocator() {
  std::lock_guard<std::mutex> lk(mu_);
  if (segments_.empty()) return;
  up_->before_raw_free();
  for (auto& [base, s] : segments_) up_->raw_free(reinterpret_cast<void*>(base));
  segments_.clear();
}

SegmentAllocator::Segment* SegmentAllocator::open_segment_locked(size_t seg_bytes, int cls, char*& base) {
  void* p = up_->raw_alloc(seg_bytes);
  if (!p) return nullptr;
  stats_.upstream_allocs++;
  stats_.segment_bytes += seg_bytes;
  stats_.segments++;
  if (cls < kClasses) class_bytes_[cls] += seg_bytes;
  base = static_cast<char*>(p);
  Segment s{seg_bytes};
  s.cls = cls;
  return &segments_.emplace(reinterpret_cast<uintptr_t>(p), s).first->second;
}

SegmentAllocator::Segment* SegmentAllocator::grow_locked(Class c, size_t b, char*& base) {
  const size_t floor = c == kSmall ? kSmallSegment : kLargeSegment;
  const size_t grown = round_up(std::min(std::max(floor, class_bytes_[c]), kMaxSegment), kHugeRound);
  size_t tried = 0;
  for (size_t bytes : {grown, floor, round_up(b, kHugeRound)}) {
    if (bytes < b || bytes == tried) continue;
    tried = bytes;
    if (Segment* s = open_segment_locked(bytes, c, base)) return s;
  }
  return nullptr;
}

void* SegmentAllocator::raw_alloc(size_t bytes) {
  const size_t b = round_up(bytes, kAlign);
  std::lock_guard<std::mutex> lk(mu_);
  const Class c = b <= kSmallBlock ? kSmall : kLarge;
  Segment* s = nullptr;
  char* base = nullptr;
  if (open_[c]) {
    auto it = segments_.find(open_[c]);
    if (it->second.bytes - it->second.used >= b) s = &it->second, base = reinterpret_cast<char*>(it->first);
  }
  if (!s && b > kLargeBlock) {
    // A huge block shares a segment only when the grown one holds it twice
    // over; otherwise it gets a segment of its own (one call for a large piece).
    const size_t grown = std::min(std::max(kLargeSegment, class_bytes_[kLarge]), kMaxSegment);
    if (grown < 2 * b) {
      Segment* own = open_segment_locked(round_up(b, kHugeRound), kClasses, base);
      if (!own) return nullptr;
      own->used = b;
      own->live = 1;
      stats_.carved_bytes += b;
      return base;
    }
  }
  if (!s) {
    // The open segment's tail stays uncarved until all its blocks came back.
    if (open_[c]) {
      auto it = segments_.find(open_[c]);
      open_[c] = 0;
      if (it->second.live == 0) {  // nothing carved from it is out: give it back now
        up_->before_raw_free();
        up_->raw_free(reinterpret_cast<void*>(it->first));
        stats_.upstream_frees++;
        stats_.segment_bytes -= it->second.bytes;
        stats_.segments--;
        class_bytes_[c] -= it->second.bytes;
        segments_.erase(it);
      }
    }
    s = grow_locked(c, b, base);
    if (!s) return nullptr;
    open_[c] = reinterpret_cast<uintptr_t>(base);
  }
  void* p = base + s->used;
  s->used += b;
  s->live++;
  stats_.carved_bytes += b;
  return p;
}

void SegmentAllocator::raw_free(void* p) noexcept {
  if (!p) return;
  std::lock_guard<std::mutex> lk(mu_);
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  auto it = segments_.upper_bound(a);
  if (it == segments_.begin()) return;  // not ours: never happens
  --it;
  Segment& s = it->second;
  if (a >= it->first + s.bytes) return;
  if (--s.live > 0) return;  // carved bytes are settled per segment: a block's size is not passed back
  stats_.carved_bytes -= s.used;
  for (uintptr_t& o : open_)
    if (o == it->first) o = 0;  // an empty open segment goes back too: the pool is emptying its cache
  up_->raw_free(reinterpret_cast<void*>(it->first));
  stats_.upstream_frees++;
  stats_.segment_bytes -= s.bytes;
  stats_.segments--;
  if (s.cls < kClasses) class_bytes_[s.cls] -= s.bytes;
  segments_.erase(it);
}

int64_t SegmentAllocator::device_allocs() const {
  std::lock_guard<std::mutex> lk(mu_);
  return static_cast<int64_t>(stats_.upstream_allocs);
}

SegmentAllocator::Stats SegmentAllocator::stats() const {
  std::lock_guard<std::mutex> lk(mu_);
  return stats_;
}

}  // namespace amlp
