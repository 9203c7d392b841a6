// step_graph.cpp — the steady-step recogniser (step_graph.h).
#include "framework/core/graph/step_graph.h"

#include "framework/error.h"

namespace amlp {

const char* to_string(StepVerdict v) {
  switch (v) {
    case StepVerdict::Eager: return "eager";
    case StepVerdict::Capture: return "capture";
    case StepVerdict::Replay: return "replay";
    case StepVerdict::Update: return "update";
  }
  return "?";
}

namespace {

// A declared buffer with no block yet (--alloc run: taken when the op
// starts), unlike an optional one left undefined (size 0).
bool unallocated(const OpSignature& op) {
  for (size_t i = 0; i < op.addresses.size(); ++i)
    if (!op.addresses[i] && op.bytes[i]) return true;
  return false;
}

}  // namespace

bool StepRecogniser::same_args(const Slot& s) const {
  if (s.args.size() != current_.size()) return false;
  for (size_t i = 0; i < current_.size(); ++i) {
    if (unallocated(current_[i])) return false;  // never the block recorded
    if (s.args[i].first != current_[i].addresses || s.args[i].second != current_[i].scalars) return false;
  }
  return true;
}

StepRecogniser::Match StepRecogniser::compare(const OpSignature& a, const OpSignature& b) {
  if (a.name != b.name || a.bytes != b.bytes || a.recordable() != b.recordable()) return Match::Different;
  if (unallocated(a)) return Match::OtherArguments;  // a block taken only when the op starts: unknown yet
  return a.addresses == b.addresses && a.scalars == b.scalars ? Match::Same : Match::OtherArguments;
}

void StepRecogniser::give_up(const std::string& reason) {
  if (has_graph()) stats_.invalidations++;
  for (Slot& s : slots_) s = Slot{};
  armed_ = false;
  holding_ = false;
  steady_ = 0;
  stats_.last_reason = reason;
}

bool StepRecogniser::op(const OpSignature& sig) {
  const size_t i = current_.size();
  const Match m = i < reference_.size() ? compare(sig, reference_[i]) : Match::Different;
  if (m == Match::Different) current_matches_ = false;
  all_recordable_ = all_recordable_ && sig.recordable();
  current_.push_back(sig);
  if (!holding_) return false;
  if (m == Match::Different || !sig.recordable()) {
    give_up(detail::concat("op #", i + 1, " of the step ('", sig.name, "') ",
                           !sig.recordable() ? std::string(sig.traits.waits_for_host ? "waits for the host: it cannot be recorded"
                                                           : sig.payload ? "carries a payload: it cannot be recorded"
                                                                         : "cannot be recorded")
                           : i < reference_.size() ? detail::concat("differs from '", reference_[i].name, "' or its shapes")
                                                   : std::string("is past the captured step's end")));
    return false;
  }
  return true;
}

void StepRecogniser::interrupt(const std::string& reason) {
  current_matches_ = false;  // this step teaches nothing
  if (holding_ || has_graph() || armed_) give_up(reason);
  steady_ = 0;
}

StepVerdict StepRecogniser::end_step() {
  stats_.steps++;
  StepVerdict v = StepVerdict::Eager;
  const bool complete = current_.size() == reference_.size() && !current_.empty();
  if (holding_ && complete) {
    int s = -1;
    for (int i = 0; i < kSlots && s < 0; ++i)
      if (slots_[i].has_graph && same_args(slots_[i])) s = i;
    if (s >= 0) {
      v = StepVerdict::Replay;
      stats_.replayed++;
    } else {  // a free slot, else the least recently launched
      s = 0;
      for (int i = 1; i < kSlots; ++i)
        if (!slots_[i].has_graph ? slots_[s].has_graph : (slots_[s].has_graph && slots_[i].used < slots_[s].used))
          s = i;
      v = slots_[s].has_graph ? StepVerdict::Update : StepVerdict::Capture;
      (v == StepVerdict::Update ? stats_.updated : stats_.captured)++;
      slots_[s].has_graph = true;
      slots_[s].args.clear();
      for (const OpSignature& op : current_) slots_[s].args.emplace_back(op.addresses, op.scalars);
    }
    slots_[s].used = ++tick_;
    slot_ = s;
  } else {
    if (holding_)
      give_up(detail::concat("the step ended after ", current_.size(), " of the captured step's ", reference_.size(),
                             " ops"));
    stats_.eager++;
    const bool steady = complete && current_matches_ && all_recordable_;
    steady_ = steady ? steady_ + 1 : 0;
    if (steady_ >= warmup_) armed_ = true;
  }
  reference_.swap(current_);
  current_.clear();
  current_matches_ = true;
  all_recordable_ = true;
  holding_ = armed_;
  return v;
}

}  // namespace amlp
