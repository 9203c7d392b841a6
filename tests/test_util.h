// test_util.h — devices to run parameterised suites on, and small helpers.
#pragma once
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "framework/asyncmlp.h"
#include "framework/scoped_settings.h"  // ScopedBlocking, ScopedMaxPending, ScopedAllocPolicy
#include "framework/core/context.h"      // engine tests reach the queues and pools
#include "framework/core/tensor/tensor_impl.h"
#include "framework/registry/backends.h"  // tests build backends of their own

namespace amlp::testing {

// A suite that registers it (AddGlobalTestEnvironment) checks, after the
// last test of its binary (or the one test ctest runs in it), that every
// tensor is gone: every device's pool has nothing in use.
class NoBytesInUseAtExit : public ::testing::Environment {
 public:
  void TearDown() override {
    waitall();
    for (DeviceContext* c : live_contexts())
      EXPECT_EQ(c->pool.stats().bytes_in_use, 0u) << "bytes still in use on " << c->device.str() << " at exit";
  }
};

// cpu:0 always; cuda:0 when a GPU is visible. Suites parameterised over this
// run the same checks on every backend the machine has.
inline std::vector<Device> test_devices() {
  std::vector<Device> ds{Device::cpu(0)};
  if (cuda_device_count() > 0) ds.push_back(Device::cuda(0));
  return ds;
}

// Why a GPU test cannot run here, or "" when it can.
inline std::string no_gpu_reason() {
  if (!built_with_cuda()) return "built without the CUDA backend (configure with -DASYNCMLP_CUDA=ON)";
  if (cuda_device_count() == 0)
    return "no CUDA GPU visible: the CUDA runtime reports 0 devices (no GPU, or no driver, or a driver older "
           "than this toolkit)";
  return "";
}

// First in a GPU test: skipped with the reason, never passed vacuously.
#define SKIP_WITHOUT_GPU()                                     \
  do {                                                         \
    const std::string why_ = ::amlp::testing::no_gpu_reason(); \
    if (!why_.empty()) GTEST_SKIP() << why_;                   \
  } while (0)

inline std::string device_name(const ::testing::TestParamInfo<Device>& info) {
  return info.param.is_cuda() ? "cuda" + std::to_string(info.param.index) : "cpu" + std::to_string(info.param.index);
}

// Pauses a device's worker for the lifetime of the guard (or until resume()).
class PausedQueue {
 public:
  explicit PausedQueue(Device d) : pause_(std::in_place, d) {}
  void resume() { pause_.reset(); }

 private:
  std::optional<QueuePause> pause_;
};

// The buffer behind a tensor, and the sequence number of the op that last wrote it.
inline const std::shared_ptr<Storage>& storage(const Tensor& t) { return detail::storage_of(t); }
inline uint64_t writer_seq(const Tensor& t) { return storage(t)->last_writer().seq; }

// Generous bound on every wait a test makes, so a broken property fails the
// test instead of hanging it. Never used to assert anything about speed.
constexpr std::chrono::seconds kHangGuard{60};

// A one-shot gate a kernel can wait on; open() (from any thread) lets it go.
// A kernel still shut after kHangGuard throws, which surfaces as a
// KernelError at the next blocker, so the test fails instead of hanging.
class Gate {
 public:
  Gate() : f_(p_.get_future().share()) {}
  ~Gate() { open(); }
  Gate(const Gate&) = delete;
  Gate& operator=(const Gate&) = delete;

  void open() {
    std::call_once(once_, [this] { p_.set_value(); });
  }
  Queue::Thunk waiter() const {
    auto f = f_;
    return [f] {
      if (f.wait_for(kHangGuard) != std::future_status::ready) throw std::runtime_error("gate never opened");
    };
  }

 private:
  std::promise<void> p_;
  std::shared_future<void> f_;
  std::once_flag once_;
};

// Opens `gate` from another thread after a short delay, setting `released`
// first. A blocker that returns with `released` still false did not wait.
// (The delay only gives a non-blocking blocker the chance to be caught; no
// assertion depends on how long anything takes.)
class OpenLater {
 public:
  OpenLater(Gate& gate, std::atomic<bool>& released, std::chrono::milliseconds delay = std::chrono::milliseconds(30))
      : t_([&gate, &released, delay] {
          std::this_thread::sleep_for(delay);
          released = true;
          gate.open();
        }) {}
  ~OpenLater() { t_.join(); }

 private:
  std::thread t_;
};

// Fixture for suites parameterised over test_devices(): asynchronous mode
// whatever the environment says, and no kernel error left behind for the
// next test.
// Drains every queue; a kernel error still pending fails the current test.
inline void expect_no_kernel_error_left() {
  try {
    waitall();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "a kernel error was left for the next test: " << e.what();
  }
}

class DeviceTest : public ::testing::TestWithParam<Device> {
 protected:
  Device dev() const { return GetParam(); }
  void TearDown() override { expect_no_kernel_error_left(); }

 private:
  ScopedBlocking async_{false};
};

// Host values, uniform in [lo, hi], from a seeded engine.
inline std::vector<float> uniform_values(std::mt19937& rng, int64_t n, float lo = -1.f, float hi = 1.f) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = u(rng);
  return v;
}

inline int uniform_int(std::mt19937& rng, int lo, int hi) {
  return std::uniform_int_distribution<int>(lo, hi)(rng);
}

}  // namespace amlp::testing
