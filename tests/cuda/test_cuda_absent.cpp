// Covers framework/cuda/no_cuda.cpp, framework/cuda/cuda_device.cpp, framework/core/device.cpp ("auto"), framework/core/runtime.cpp (device_absent).
// with no GPU visible (or no CUDA backend), CUDA is
// refused cleanly: no crash, no exception from asking, one clear DeviceError
// for asking to use it, and "auto" falls back to the CPU and says so. Skipped
// where a GPU is visible (test_cuda_backend.cpp covers that machine).
#include <string>

#include "test_util.h"

namespace amlp::testing {
namespace {

class CudaAbsent : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda_device_count() > 0)
      GTEST_SKIP() << "a CUDA GPU is visible: this suite checks the behaviour without one";
  }
};

TEST_F(CudaAbsent, AskingIsCheapAndNeverThrows) {
  EXPECT_EQ(cuda_device_count(), 0);
  EXPECT_EQ(cuda_device_count(), 0);  // cached, same answer
  size_t free_bytes = 1, total = 1;
  EXPECT_FALSE(device_memory_info(Device::cuda(0), &free_bytes, &total));
  EXPECT_EQ(free_bytes, 1u);
  EXPECT_EQ(total, 1u);
}

TEST_F(CudaAbsent, AutoFallsBackToTheCpuAndSaysSo) {
  bool fell_back = false;
  EXPECT_EQ(parse_device("auto", &fell_back), Device::cpu(0));
  EXPECT_TRUE(fell_back);
}

TEST_F(CudaAbsent, UsingCudaIsOneClearDeviceError) {
  for (const char* name : {"cuda", "cuda:0", "cuda:1"}) {
    try {
      parse_device(name);
      ADD_FAILURE() << name << " was accepted";
    } catch (const DeviceError& e) {
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(context(Device::cuda(0)), DeviceError);
  EXPECT_THROW(make_cuda_backend(0), DeviceError);
}

}  // namespace
}  // namespace amlp::testing
