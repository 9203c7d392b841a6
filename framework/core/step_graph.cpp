// step_graph.cpp — the steady-step recogniser (step_graph.h).
#include "framework/core/step_graph.h"

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

StepRecogniser::Match StepRecogniser::compare(const OpSignature& a, const OpSignature& b) {
  if (a.name != b.name || a.bytes != b.bytes || a.capturable != b.capturable) return Match::Different;
  for (const void* p : a.addresses)  // a block taken only when the op starts (--alloc run): unknown yet
    if (!p) return Match::OtherArguments;
  return a.addresses == b.addresses && a.scalars == b.scalars ? Match::Same : Match::OtherArguments;
}

void StepRecogniser::give_up(const std::string& reason) {
  if (has_graph_) stats_.invalidations++;
  has_graph_ = false;
  armed_ = false;
  holding_ = false;
  steady_ = 0;
  stats_.last_reason = reason;
}

bool StepRecogniser::op(const OpSignature& sig) {
  const size_t i = current_.size();
  const Match m = i < reference_.size() ? compare(sig, reference_[i]) : Match::Different;
  if (m == Match::Different) current_matches_ = false;
  if (m == Match::OtherArguments) moved_ = true;
  all_capturable_ = all_capturable_ && sig.capturable;
  current_.push_back(sig);
  if (!holding_) return false;
  if (m == Match::Different || !sig.capturable) {
    give_up(detail::concat("op #", i + 1, " of the step ('", sig.name, "') ",
                           !sig.capturable ? "cannot be captured"
                           : i < reference_.size() ? detail::concat("differs from '", reference_[i].name, "' or its shapes")
                                                   : std::string("is past the captured step's end")));
    return false;
  }
  return true;
}

void StepRecogniser::interrupt(const std::string& reason) {
  current_matches_ = false;  // this step teaches nothing
  if (holding_ || has_graph_ || armed_) give_up(reason);
  steady_ = 0;
}

StepVerdict StepRecogniser::end_step() {
  stats_.steps++;
  StepVerdict v = StepVerdict::Eager;
  const bool complete = current_.size() == reference_.size() && !current_.empty();
  if (holding_ && complete) {
    if (!has_graph_) {
      v = StepVerdict::Capture;
      has_graph_ = true;
      stats_.captured++;
    } else if (moved_) {
      v = StepVerdict::Update;
      stats_.updated++;
    } else {
      v = StepVerdict::Replay;
      stats_.replayed++;
    }
  } else {
    if (holding_)
      give_up(detail::concat("the step ended after ", current_.size(), " of the captured step's ", reference_.size(),
                             " ops"));
    stats_.eager++;
    const bool steady = complete && current_matches_ && all_capturable_;
    steady_ = steady ? steady_ + 1 : 0;
    if (steady_ >= warmup_) armed_ = true;
  }
  reference_.swap(current_);
  current_.clear();
  current_matches_ = true;
  all_capturable_ = true;
  moved_ = false;
  holding_ = armed_;
  return v;
}

}  // namespace amlp
