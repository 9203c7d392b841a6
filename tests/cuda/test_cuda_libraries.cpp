// Covers framework/cuda/libraries.cpp: cuBLAS, cuBLASLt, cuRAND and NCCL are
// opened on their first use, so a run on the CPU never maps them (the
// program starts under a `ulimit -v` they alone would exceed: test_limits),
// and once opened each forwards to the library's own function.
#include "test_util.h"

#if ASYNCMLP_WITH_CUDA
#include <cublas_v2.h>

#include "framework/cuda/libraries.h"
#include "models/mlp.h"
#endif

namespace amlp::testing {
namespace {

#if ASYNCMLP_WITH_CUDA

// First in this executable: nothing before it has used a GPU library.
TEST(CudaLibraries, ACpuRunOpensNoneOfThem) {
  ASSERT_EQ(cuda::opened_libraries(), 0) << "opened before the test ran";
  const Device cpu0 = Device::cpu(0);
  manual_seed(1);
  auto net = models::make_mlp(models::LayerSpec{{16, 8}}, 1);
  Tensor x = randn({32, 12}, cpu0), y = ones({32}, cpu0);
  {
    NoGradGuard ng;
    (void)(*net)(x);
  }
  SGD sgd(net->parameters(), 0.01f);
  for (int i = 0; i < 3; ++i) {
    l2_loss((*net)(x), y).backward();
    sgd.step(32);
  }
  (void)cuda_device_count();  // asking about GPUs is the CUDA runtime's, not these libraries'
  waitall();
  EXPECT_EQ(cuda::opened_libraries(), 0);
}

// Here the toolkit's libraries are where the build found them: each opens,
// and a call goes through to the library (whose answer, without a GPU, is
// its own error status, and its own text for it).
TEST(CudaLibraries, EachOpensOnFirstUseAndForwardsToTheLibrary) {
  for (auto lib : {cuda::CudaLibrary::kCublas, cuda::CudaLibrary::kCublasLt, cuda::CudaLibrary::kCurand})
    EXPECT_EQ(cuda::library_problem(lib), "") << static_cast<int>(lib);
  EXPECT_GE(cuda::opened_libraries(), 3);
  const std::string text = cublasGetStatusString(CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_NE(text.find("unsupported value"), std::string::npos) << "cuBLAS's own text, not a stand-in: " << text;
  if (cuda_device_count() == 0) {
    cublasHandle_t h = nullptr;
    EXPECT_NE(cublasCreate(&h), CUBLAS_STATUS_SUCCESS) << "no GPU, yet a cuBLAS handle";
  }
}

#else

TEST(CudaLibraries, AreOpenedOnlyInACudaBuild) { GTEST_SKIP() << "built without CUDA (ASYNCMLP_CUDA=OFF)"; }

#endif

}  // namespace
}  // namespace amlp::testing
