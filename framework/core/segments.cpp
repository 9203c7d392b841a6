// segments.cpp — carving the pool's blocks out of device segments (segments.h).
#include "framework/core/segments.h"

namespace amlp {

SegmentAllocator::~SegmentAllocator() {
  std::lock_guard<std::mutex> lk(mu_);
  if (segments_.empty()) return;
  up_->before_raw_free();
  for (auto& [base, s] : segments_) up_->raw_free(reinterpret_cast<void*>(base));
  segments_.clear();
}

SegmentAllocator::Segment* SegmentAllocator::open_segment_locked(size_t seg_bytes, char*& base) {
  void* p = up_->raw_alloc(seg_bytes);
  if (!p) return nullptr;
  stats_.upstream_allocs++;
  stats_.segment_bytes += seg_bytes;
  stats_.segments++;
  base = static_cast<char*>(p);
  return &segments_.emplace(reinterpret_cast<uintptr_t>(p), Segment{seg_bytes}).first->second;
}

void* SegmentAllocator::raw_alloc(size_t bytes) {
  const size_t b = (bytes + kAlign - 1) / kAlign * kAlign;
  std::lock_guard<std::mutex> lk(mu_);
  if (b > kLargeBlock) {  // a segment of its own
    char* base = nullptr;
    Segment* s = open_segment_locked((b + kHugeRound - 1) / kHugeRound * kHugeRound, base);
    if (!s) return nullptr;
    s->used = b;
    s->live = 1;
    stats_.carved_bytes += b;
    return base;
  }
  const Class c = b <= kSmallBlock ? kSmall : kLarge;
  Segment* s = nullptr;
  char* base = nullptr;
  if (open_[c]) {
    auto it = segments_.find(open_[c]);
    if (it->second.bytes - it->second.used >= b) s = &it->second, base = reinterpret_cast<char*>(it->first);
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
        segments_.erase(it);
      }
    }
    s = open_segment_locked(c == kSmall ? kSmallSegment : kLargeSegment, base);
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
  segments_.erase(it);
}

SegmentAllocator::Stats SegmentAllocator::stats() const {
  std::lock_guard<std::mutex> lk(mu_);
  return stats_;
}

}  // namespace amlp
