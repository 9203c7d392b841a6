// split_in_two.cpp — the helper thread behind split_in_two() (split_in_two.h).
#include "framework/cpu/split_in_two.h"

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

namespace amlp::cpu {

namespace {

class Helper {
 public:
  Helper() : thread_([this] { loop(); }) {}

  bool run(void (*fn)(void*, int), void* arg) {
    std::unique_lock<std::mutex> use(use_, std::try_to_lock);  // one job at a time
    if (!use) return false;
    uint64_t ticket;
    {
      std::lock_guard<std::mutex> lk(mu_);
      fn_ = fn;
      arg_ = arg;
      ticket = ++posted_;
    }
    wake_.notify_one();
    fn(arg, 0);
    std::unique_lock<std::mutex> lk(mu_);
    done_.wait(lk, [&] { return finished_ == ticket; });
    return true;
  }

 private:
  void loop() {
    uint64_t seen = 0;
    std::unique_lock<std::mutex> lk(mu_);
    for (;;) {
      wake_.wait(lk, [&] { return posted_ != seen; });
      seen = posted_;
      auto* fn = fn_;
      void* arg = arg_;
      lk.unlock();
      fn(arg, 1);
      lk.lock();
      finished_ = seen;
      done_.notify_one();
    }
  }

  std::mutex use_;
  std::mutex mu_;
  std::condition_variable wake_, done_;
  void (*fn_)(void*, int) = nullptr;
  void* arg_ = nullptr;
  uint64_t posted_ = 0, finished_ = 0;
  std::thread thread_;  // last: starts once the members above exist
};

// Immortal: a kernel may still run on some worker while statics are destroyed
// at exit, and a sleeping helper costs nothing there.
Helper* helper() {
  static Helper* h = std::thread::hardware_concurrency() >= 2 ? new Helper() : nullptr;
  return h;
}

}  // namespace

bool split_in_two(void (*fn)(void*, int), void* arg) {
  Helper* h = helper();
  if (h && h->run(fn, arg)) return true;
  fn(arg, 0);
  fn(arg, 1);
  return false;
}

}  // namespace amlp::cpu
