// step_memory.cpp — the graph slots' blocks (step_memory.h).
#include "framework/core/memory/step_memory.h"

namespace amlp {

void StepSlots::begin() {
  slot_ = (slot_ + 1) % kSlots;
  pos_ = 0;
  open_ = true;
}

void StepSlots::disown(Block& b, Blocks& freed) {
  where_.erase(b.p);
  owned_bytes_ -= b.size;
  if (b.free) {
    free_bytes_ -= b.size;
    freed.emplace_back(b.p, b.size);
  }
  b = Block{};
}

StepSlots::Blocks StepSlots::end() {
  Blocks freed;
  if (!open_) return freed;
  std::vector<Block>& s = slots_[slot_];
  for (size_t i = pos_; i < s.size(); ++i) disown(s[i], freed);
  s.resize(pos_);
  open_ = false;
  return freed;
}

StepSlots::Block* StepSlots::next() {
  std::vector<Block>& s = slots_[slot_];
  return pos_ < s.size() && s[pos_].p ? &s[pos_] : nullptr;
}

void StepSlots::set_owner(void* p, const std::shared_ptr<Storage>& s) {
  const auto it = where_.find(p);
  if (it != where_.end()) slots_[it->second.first][it->second.second].owner = s;
}

void* StepSlots::take(size_t sz) {
  std::vector<Block>& s = slots_[slot_];
  if (pos_ >= s.size() || !s[pos_].free || s[pos_].size != sz) return nullptr;
  Block& b = s[pos_++];
  b.free = false;
  free_bytes_ -= b.size;
  return b.p;
}

std::pair<void*, size_t> StepSlots::adopt(void* p, size_t sz) {
  std::vector<Block>& s = slots_[slot_];
  Blocks freed;
  if (pos_ < s.size()) {
    disown(s[pos_], freed);
  } else {
    s.emplace_back();
  }
  s[pos_] = Block{p, sz, false, {}};
  where_[p] = {slot_, pos_};
  owned_bytes_ += sz;
  ++pos_;
  return freed.empty() ? std::pair<void*, size_t>{nullptr, 0} : freed.front();
}

bool StepSlots::release(void* p) {
  const auto it = where_.find(p);
  if (it == where_.end()) return false;
  Block& b = slots_[it->second.first][it->second.second];
  b.free = true;
  b.owner.reset();
  free_bytes_ += b.size;
  return true;
}

StepSlots::Blocks StepSlots::take_free() {
  Blocks freed;
  for (std::vector<Block>& s : slots_)
    for (Block& b : s)
      if (b.free) disown(b, freed);  // its position stays, empty: the next step there takes a pool block
  return freed;
}

StepSlots::Blocks StepSlots::clear() {
  Blocks freed;
  for (std::vector<Block>& s : slots_) {
    for (Block& b : s)
      if (b.p) disown(b, freed);
    s.clear();
  }
  where_.clear();
  open_ = false;
  pos_ = 0;
  return freed;
}

}  // namespace amlp
