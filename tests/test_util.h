// test_util.h — devices to run parameterised suites on, and small helpers.
#pragma once
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "framework/asyncmlp.h"

namespace amlp::testing {

// cpu:0 always; cuda:0 when a GPU is visible. Suites parameterised over this
// run the same checks on every backend the machine has.
inline std::vector<Device> test_devices() {
  std::vector<Device> ds{Device::cpu(0)};
  if (cuda_device_count() > 0) ds.push_back(Device::cuda(0));
  return ds;
}

inline std::string device_name(const ::testing::TestParamInfo<Device>& info) {
  return info.param.is_cuda() ? "cuda" + std::to_string(info.param.index) : "cpu" + std::to_string(info.param.index);
}

// Pauses a device's worker for the lifetime of the guard.
class PausedQueue {
 public:
  explicit PausedQueue(Device d) : q_(context(d).queue) { q_.pause(); }
  ~PausedQueue() { q_.resume(); }
  void resume() { q_.resume(); }

 private:
  Queue& q_;
};

}  // namespace amlp::testing
