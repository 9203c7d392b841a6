// Covers framework/cuda/cuda_backend.cpp and the CUDA backend's kernels and helpers (framework/cuda/*.cu, linalg.cpp, lt_gemm.cpp, event_ring.cpp, cuda_check.cpp, device_guard.h), against the CPU backend.
// test_cuda_backend.cpp — the CUDA backend against the CPU backend, and the
// asynchronous contract on a GPU (docs/design.md §1–§7).
//
// Differential tests in the ggml test-backend-ops style: every op on cuda:0
// and cpu:0 from the same inputs, each with the bound it is held to and why;
// then the d2l MLP's 20-step loss trajectory (llm.c test_gpt2.cu style),
// Philox numbers host vs device, memory (no cudaMalloc after warm-up, bytes
// back to baseline, clean out-of-memory), errors across the queue, blockers
// and cross-device ordering.
//
// Without a GPU (or without the CUDA backend) every test is skipped with the
// reason; none passes vacuously.
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "framework/cpu/philox.h"
#include "models/mlp.h"
#ifdef ASYNCMLP_WITH_CUDA
#include "framework/core/context.h"
#include "framework/util/env.h"
#include "framework/cuda/cuda_backend.h"
#include "framework/cuda/cuda_check.h"
#include "framework/cuda/device_guard.h"
#ifdef ASYNCMLP_WITH_CUDA
#include "framework/cuda/kernels.h"
#include "framework/cuda/lt_gemm.h"
#endif
#endif
#include "test_util.h"

namespace amlp::testing {
namespace {

Device gpu() { return Device::cuda(0); }
Device cpu() { return Device::cpu(0); }

// TF32 for the guard's lifetime. tf32() is read when a GEMM is launched, on
// the worker: drain the queues before switching it.
class ScopedTf32 {
 public:
  explicit ScopedTf32(bool on) : prev_(tf32()) {
    waitall();
    set_tf32(on);
  }
  ~ScopedTf32() {
    try {
      waitall();
    } catch (...) {
    }
    set_tf32(prev_);
  }

 private:
  bool prev_;
};

// A cap on a pool's reserved bytes for the guard's lifetime.
class ScopedPoolLimit {
 public:
  ScopedPoolLimit(Pool& p, size_t bytes) : pool_(p) { pool_.set_limit(bytes); }
  ~ScopedPoolLimit() { pool_.set_limit(0); }

 private:
  Pool& pool_;
};

class Cuda : public ::testing::Test {
 protected:
  void SetUp() override { SKIP_WITHOUT_GPU(); }
  void TearDown() override {
    if (!IsSkipped()) expect_no_kernel_error_left();
  }

 private:
  ScopedBlocking async_{false};
};

// --- comparing results --------------------------------------------------------------

// Distance in units in the last place (0 for equal values, +0 and -0 included).
int64_t ulp_distance(float a, float b) {
  auto key = [](float f) {
    int32_t i;
    std::memcpy(&i, &f, sizeof i);
    return i >= 0 ? int64_t(i) : int64_t(INT32_MIN) - int64_t(i);
  };
  const int64_t d = key(a) - key(b);
  return d < 0 ? -d : d;
}

// "" when bitwise equal, else where they first differ.
std::string bitwise_mismatch(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size()) return "sizes " + std::to_string(got.size()) + " and " + std::to_string(want.size());
  size_t count = 0, first = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0 && count++ == 0) first = i;
  if (count == 0) return "";
  std::ostringstream os;
  os.precision(9);
  os << count << " of " << got.size() << " values differ; first at " << first << ": got " << got[first]
     << ", want " << want[first] << " (" << ulp_distance(got[first], want[first]) << " ulp)";
  return os.str();
}

// ||got - want||_2 / ||want||_2
double norm_rel(const std::vector<float>& got, const std::vector<float>& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double d = double(got[i]) - double(want[i]);
    num += d * d;
    den += double(want[i]) * want[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

// max_i |got - want| / max(|want|, 1e-30)
double max_elem_rel(const std::vector<float>& got, const std::vector<float>& want) {
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double d = std::fabs(double(got[i]) - double(want[i])) / std::max(std::fabs(double(want[i])), 1e-30);
    if (!(d <= worst)) worst = d;  // NaN counts as worst
  }
  return worst;
}

// --- every op, cuda:0 against cpu:0 ------------------------------------------------------------

enum class Bound {
  Exact,    // bitwise equal: the same float operations in the same order
  NormRel,  // ||gpu - cpu|| / ||cpu|| <= tol
  ElemRel,  // every |gpu - cpu| / |cpu| <= tol
};

struct OpCase {
  std::string name;
  std::vector<Shape> inputs;  // N(0, 1), drawn on cpu:0 and copied to cuda:0
  std::function<Tensor(Device, std::vector<Tensor>&)> run;
  Bound bound;
  double tol;
  std::string why;
};

void PrintTo(const OpCase& c, std::ostream* os) { *os << c.name; }

Tensor grad_of(Tensor& x) { return x.grad(); }

std::vector<OpCase> op_cases() {
  using In = std::vector<Tensor>;
  const std::string same_ops = "the kernel repeats the CPU loop's float operations in order, without FMA";
  const std::string gemm = "cuBLAS and OpenBLAS FP32 GEMMs differ in summation order: ~sqrt(K)*2^-24 normwise";
  const std::string colsum =
      "the GPU sums columns in double, the CPU in float in order; its rounding error, ~rows*2^-24/sqrt(2) of "
      "the column norm (~1.5e-6 here), is the difference";
  std::vector<OpCase> c;
  c.push_back({"fill", {}, [](Device d, In&) { return full({37, 41}, 3.25f, d); }, Bound::Exact, 0, "a store"});
  c.push_back({"fill_zero", {}, [](Device d, In&) { return full({1000}, 0.f, d); }, Bound::Exact, 0,
               "cudaMemsetAsync for +0"});
  c.push_back({"fill_negative_zero", {}, [](Device d, In&) { return full({1000}, -0.f, d); }, Bound::Exact, 0,
               "-0 keeps its sign (a kernel, not memset)"});
  c.push_back({"copy", {{1001}}, [](Device d, In& in) {
                 Tensor y = zeros({1001}, d);
                 copy_(y, in[0]);
                 return y;
               },
               Bound::Exact, 0, "bytes"});
  c.push_back({"add", {{513, 129}, {513, 129}}, [](Device, In& in) { return add(in[0], in[1]); }, Bound::Exact, 0,
               same_ops});
  c.push_back({"sub", {{513, 129}, {513, 129}}, [](Device, In& in) { return sub(in[0], in[1]); }, Bound::Exact, 0,
               same_ops});
  c.push_back(
      {"mul", {{513, 129}, {513, 129}}, [](Device, In& in) { return mul(in[0], in[1]); }, Bound::Exact, 0, same_ops});
  c.push_back({"scale", {{70001}}, [](Device, In& in) { return scale(in[0], 0.37f); }, Bound::Exact, 0, same_ops});
  c.push_back({"add_scalar", {{70001}}, [](Device, In& in) { return add_scalar(in[0], -1.5f); }, Bound::Exact, 0,
               same_ops});
  c.push_back({"bias_add", {{300, 77}, {77}}, [](Device, In& in) { return bias_add(in[0], in[1]); }, Bound::Exact,
               0, same_ops});
  c.push_back({"relu", {{1000, 33}}, [](Device, In& in) { return relu(in[0]); }, Bound::Exact, 0, "a select"});
  c.push_back({"relu_backward", {{64, 33}, {64, 33}}, [](Device, In& in) {
                 in[0].requires_grad_();
                 l2_loss(relu(in[0]), in[1]).backward();  // dpred exact, then dx = dy * (x > 0)
                 return grad_of(in[0]);
               },
               Bound::Exact, 0, same_ops});
  c.push_back({"l2_loss_one_column", {{1024, 1}, {1024}}, [](Device, In& in) { return l2_loss(in[0], in[1]); },
               Bound::Exact, 0, "one thread per row, the CPU's order"});
  c.push_back({"l2_loss_narrow", {{100, 7}, {100, 7}}, [](Device, In& in) { return l2_loss(in[0], in[1]); },
               Bound::Exact, 0, "one thread per row, the CPU's order"});
  c.push_back({"l2_loss_wide", {{100, 300}, {100, 300}}, [](Device, In& in) { return l2_loss(in[0], in[1]); },
               Bound::ElemRel, 1e-5, "a warp's tree sum vs a sequential sum of 300 positive squares: <= 300*2^-24"});
  c.push_back({"l2_loss_backward", {{100, 7}, {100, 7}}, [](Device, In& in) {
                 in[0].requires_grad_();
                 l2_loss(in[0], in[1]).backward();
                 return grad_of(in[0]);
               },
               Bound::Exact, 0, same_ops});
  // backward() from the loss takes the gradient its forward wrote (the unit
  // head); an explicit head runs the backward kernel.
  c.push_back({"l2_loss_unit_grad_wide", {{100, 300}, {100, 300}}, [](Device, In& in) {
                 in[0].requires_grad_();
                 l2_loss(in[0], in[1]).backward();
                 return grad_of(in[0]);
               },
               Bound::Exact, 0, same_ops});
  c.push_back({"l2_loss_backward_explicit_head", {{100, 7}, {100, 7}, {100}}, [](Device, In& in) {
                 in[0].requires_grad_();
                 backward(l2_loss(in[0], in[1]), in[2]);
                 return grad_of(in[0]);
               },
               Bound::Exact, 0, same_ops});
  c.push_back({"sum", {{1000, 37}}, [](Device, In& in) { return sum(in[0]); }, Bound::ElemRel, 1e-6,
               "both accumulate in double, then round to float once"});
  c.push_back({"mean", {{4097}}, [](Device, In& in) { return mean(in[0]); }, Bound::ElemRel, 1e-6,
               "both accumulate in double, then round to float once"});
  c.push_back({"mean_backward", {{333, 7}}, [](Device, In& in) {
                 in[0].requires_grad_();
                 mean(in[0]).backward();  // broadcast_scalar
                 return grad_of(in[0]);
               },
               Bound::Exact, 0, same_ops});
  c.push_back({"sum_rows", {{1024, 2048}}, [](Device, In& in) { return sum_rows(in[0]); }, Bound::NormRel, 2e-5,
               colsum});
  c.push_back({"sum_rows_one_column", {{1024, 1}}, [](Device, In& in) { return sum_rows(in[0]); }, Bound::NormRel,
               2e-5, colsum});
  c.push_back({"sum_rows_odd", {{37, 45}}, [](Device, In& in) { return sum_rows(in[0]); }, Bound::NormRel, 2e-5,
               colsum});
  c.push_back({"matmul_nn", {{37, 29}, {29, 53}}, [](Device, In& in) { return matmul(in[0], in[1]); },
               Bound::NormRel, 1e-5, gemm});
  c.push_back({"matmul_nt", {{37, 29}, {53, 29}},
               [](Device, In& in) { return matmul(in[0], in[1], false, /*transpose_b=*/true); }, Bound::NormRel,
               1e-5, gemm});
  c.push_back({"matmul_tn", {{29, 37}, {29, 53}},
               [](Device, In& in) { return matmul(in[0], in[1], /*transpose_a=*/true, false); }, Bound::NormRel,
               1e-5, gemm});
  c.push_back({"matmul_tt", {{29, 37}, {53, 29}},
               [](Device, In& in) { return matmul(in[0], in[1], /*transpose_a=*/true, /*transpose_b=*/true); },
               Bound::NormRel, 1e-5, gemm});
  c.push_back({"matmul_one_row", {{1, 512}, {512, 64}}, [](Device, In& in) { return matmul(in[0], in[1]); },
               Bound::NormRel, 1e-5, gemm});
  c.push_back({"matmul_one_column", {{64, 512}, {512, 1}}, [](Device, In& in) { return matmul(in[0], in[1]); },
               Bound::NormRel, 1e-5, gemm});
  c.push_back({"linear_d2l_layer1", {{1024, 512}, {2048, 512}, {2048}},
               [](Device, In& in) { return linear(in[0], in[1], in[2]); }, Bound::NormRel, 1e-5, gemm});
  c.push_back({"linear_no_bias", {{1024, 2048}, {512, 2048}},
               [](Device, In& in) { return linear(in[0], in[1], Tensor()); }, Bound::NormRel, 1e-5, gemm});
  auto linear_grad = [](int which) {
    return [which](Device, In& in) {
      for (Tensor& t : in) t.requires_grad_();
      l2_loss(linear(in[0], in[1], in[2]), in[3]).backward();
      return grad_of(in[which]);
    };
  };
  c.push_back({"linear_grad_input", {{256, 512}, {2048, 512}, {2048}, {256, 2048}}, linear_grad(0), Bound::NormRel,
               1e-5, gemm});
  c.push_back({"linear_grad_weight", {{256, 512}, {2048, 512}, {2048}, {256, 2048}}, linear_grad(1),
               Bound::NormRel, 1e-5, gemm});
  c.push_back({"linear_grad_bias", {{256, 512}, {2048, 512}, {2048}, {256, 2048}}, linear_grad(2), Bound::NormRel,
               2e-5, colsum});
  c.push_back({"linear_relu", {{1024, 512}, {2048, 512}, {2048}},
               [](Device, In& in) { return linear_relu(in[0], in[1], in[2]); }, Bound::NormRel, 1e-5, gemm});
  auto linear_relu_grad = [](int which) {
    return [which](Device, In& in) {
      for (Tensor& t : in) t.requires_grad_();
      l2_loss(linear_relu(in[0], in[1], in[2]), in[3]).backward();
      return grad_of(in[which]);
    };
  };
  c.push_back({"linear_relu_grad_weight", {{256, 512}, {2048, 512}, {2048}, {256, 2048}}, linear_relu_grad(1),
               Bound::NormRel, 1e-5, gemm});
  c.push_back({"linear_relu_grad_bias", {{256, 512}, {2048, 512}, {2048}, {256, 2048}}, linear_relu_grad(2),
               Bound::NormRel, 2e-5, colsum});
  // relu_backward_sum_rows over many row chunks (rows not a multiple of 32), and over one.
  c.push_back({"linear_relu_grad_bias_row_chunks", {{1000, 13}, {37, 13}, {37}, {1000, 37}}, linear_relu_grad(2),
               Bound::NormRel, 2e-5, colsum});
  c.push_back({"linear_relu_grad_input_row_chunks", {{1000, 13}, {37, 13}, {37}, {1000, 37}}, linear_relu_grad(0),
               Bound::NormRel, 1e-5, gemm});
  // The same with float4 accesses (columns a multiple of 4; rows not of the block's 8).
  c.push_back({"linear_relu_grad_bias_wide_row_chunks", {{1001, 13}, {36, 13}, {36}, {1001, 36}}, linear_relu_grad(2),
               Bound::NormRel, 2e-5, colsum});
  c.push_back({"linear_relu_grad_input_wide_row_chunks", {{1001, 13}, {36, 13}, {36}, {1001, 36}},
               linear_relu_grad(0), Bound::NormRel, 1e-5, gemm});
  // A layer of one output unit over a Dense with ReLU (the d2l MLP's end):
  // its forward (out_gemv) and the gradients through its input gradient,
  // mask and bias sums (out_grad); ASYNCMLP_CANDIDATES=all runs them through
  // the candidates (the GPU kit does).
  auto out_layer = [](int which) {
    return [which](Device, In& in) {
      for (Tensor& t : in) t.requires_grad_();
      Tensor z = linear(linear_relu(in[0], in[1], in[2]), in[3], in[4]);
      if (which < 0) return z;
      l2_loss(z, in[5]).backward();
      return grad_of(in[which]);
    };
  };
  for (const auto& [tag, rows, hidden] :
       {std::tuple{"d2l", 1024, 512}, std::tuple{"wide", 1001, 36}, std::tuple{"narrow", 1000, 13}}) {
    const std::vector<Shape> s = {{rows, 64}, {hidden, 64}, {hidden}, {1, hidden}, {1}, {rows}};
    c.push_back({std::string("out_layer_forward_") + tag, s, out_layer(-1), Bound::NormRel, 1e-5, gemm});
    c.push_back({std::string("out_layer_grad_weight_") + tag, s, out_layer(1), Bound::NormRel, 1e-5, gemm});
    c.push_back({std::string("out_layer_grad_bias_") + tag, s, out_layer(2), Bound::NormRel, 2e-5, colsum});
  }
  c.push_back({"linear_relu_grad_bias_one_chunk", {{20, 13}, {37, 13}, {37}, {20, 37}}, linear_relu_grad(2),
               Bound::NormRel, 2e-5, colsum});
  // A layer over a Dense with ReLU: its input gradient carries the ReLU's
  // backward and the lower bias's gradient (linear_grad_input_relu; CUDA:
  // DRELU_BGRAD over the mask the forward kept, RELU_AUX_BIAS). The d2l
  // layers 1-2, and odd sizes (the mask's rows padded to 128 bits).
  auto over_relu_grad = [](int which) {
    return [which](Device, In& in) {
      for (size_t i = 0; i + 1 < in.size(); ++i) in[i].requires_grad_();
      l2_loss(linear(linear_relu(in[0], in[1], in[2]), in[3], in[4]), in[5]).backward();
      return grad_of(in[which]);
    };
  };
  const std::vector<Shape> d2l12{{256, 512}, {2048, 512}, {2048}, {512, 2048}, {512}, {256, 512}};
  const std::vector<Shape> odd{{100, 13}, {37, 13}, {37}, {5, 37}, {5}, {100, 5}};
  c.push_back({"dense_over_relu_grad_input", d2l12, over_relu_grad(0), Bound::NormRel, 1e-5, gemm});
  c.push_back({"dense_over_relu_grad_weight", d2l12, over_relu_grad(1), Bound::NormRel, 1e-5, gemm});
  c.push_back({"dense_over_relu_grad_bias", d2l12, over_relu_grad(2), Bound::NormRel, 2e-5, colsum});
  c.push_back({"dense_over_relu_odd_grad_input", odd, over_relu_grad(0), Bound::NormRel, 1e-5, gemm});
  c.push_back({"dense_over_relu_odd_grad_bias", odd, over_relu_grad(2), Bound::NormRel, 2e-5, colsum});
  // A lower layer without a bias: the ReLU's backward alone (no column sums), wide and odd.
  auto over_unbiased_relu_grad_input = [](Device, In& in) {
    for (size_t i = 0; i + 1 < in.size(); ++i) in[i].requires_grad_();
    l2_loss(linear(linear_relu(in[0], in[1], Tensor()), in[2], in[3]), in[4]).backward();
    return grad_of(in[0]);
  };
  c.push_back({"dense_over_unbiased_relu_grad_input", {{1001, 64}, {256, 64}, {8, 256}, {8}, {1001, 8}},
               over_unbiased_relu_grad_input, Bound::NormRel, 1e-5, gemm});
  c.push_back({"dense_over_unbiased_relu_odd_grad_input", {{100, 13}, {37, 13}, {5, 37}, {5}, {100, 5}},
               over_unbiased_relu_grad_input, Bound::NormRel, 1e-5, gemm});
  // cuBLASLt's epilogues (lt_gemm.h): the d2l output layer (one unit), odd
  // sizes, no bias; the weight gradient with its bias gradient (BGRADB).
  c.push_back({"linear_d2l_layer3", {{1024, 512}, {1, 512}, {1}},
               [](Device, In& in) { return linear(in[0], in[1], in[2]); }, Bound::NormRel, 1e-5, gemm});
  c.push_back({"linear_relu_odd_sizes", {{37, 13}, {7, 13}, {7}},
               [](Device, In& in) { return linear_relu(in[0], in[1], in[2]); }, Bound::NormRel, 1e-5, gemm});
  c.push_back({"linear_relu_no_bias", {{64, 512}, {2048, 512}},
               [](Device, In& in) { return linear_relu(in[0], in[1], Tensor()); }, Bound::NormRel, 1e-5, gemm});
  auto grad_weight = [](bool db) {
    return [db](Device, In& in) {
      auto [dw, b] = linear_grad_weight(in[0], in[1], db);
      return db ? b : dw;
    };
  };
  c.push_back({"linear_grad_weight_d2l_layer3", {{1024, 1}, {1024, 512}}, grad_weight(false), Bound::NormRel, 1e-5,
               gemm});
  c.push_back({"linear_grad_bias_d2l_layer3", {{1024, 1}, {1024, 512}}, grad_weight(true), Bound::NormRel, 2e-5,
               colsum});
  c.push_back({"linear_grad_weight_odd_sizes", {{37, 7}, {37, 13}}, grad_weight(false), Bound::NormRel, 1e-5, gemm});
  c.push_back({"linear_grad_bias_odd_sizes", {{37, 7}, {37, 13}}, grad_weight(true), Bound::NormRel, 2e-5, colsum});
  c.push_back({"sgd_update", {{2048, 3}, {2048, 3}}, [](Device, In& in) {
                 Tensor none;
                 sgd_update_(in[0], in[1], none, 0.005f, 0.f, 1e-4f, 1.f / 1024);
                 return in[0];
               },
               Bound::Exact, 0, same_ops});
  c.push_back({"sgd_update_momentum", {{2048, 3}, {2048, 3}, {2048, 3}}, [](Device, In& in) {
                 sgd_update_(in[0], in[1], in[2], 0.1f, 0.9f, 1e-4f, 1.f / 1024);
                 return add(in[0], in[2]);  // both the weight and the momentum
               },
               Bound::Exact, 0, same_ops});
  return c;
}

class CudaVsCpu : public ::testing::TestWithParam<OpCase> {
 protected:
  void SetUp() override { SKIP_WITHOUT_GPU(); }

 private:
  ScopedBlocking async_{false};
};

TEST_P(CudaVsCpu, SameResultWithinTheStatedBound) {
  const OpCase& c = GetParam();
  ScopedTf32 fp32(false);
  manual_seed(1234);
  std::vector<Tensor> on_cpu, on_gpu;
  for (const Shape& s : c.inputs) {
    on_cpu.push_back(randn(s, cpu()));
    on_gpu.push_back(copy_to(on_cpu.back(), gpu()));
  }
  const Tensor want_t = c.run(cpu(), on_cpu);
  const Tensor got_t = c.run(gpu(), on_gpu);
  ASSERT_EQ(got_t.device(), gpu());
  ASSERT_EQ(shape_str(got_t.shape()), shape_str(want_t.shape()));
  const std::vector<float> want = want_t.to_host(), got = got_t.to_host();
  SCOPED_TRACE(c.name + ": " + c.why);
  switch (c.bound) {
    case Bound::Exact:
      EXPECT_EQ(bitwise_mismatch(got, want), "") << "expected bitwise equality";
      break;
    case Bound::NormRel:
      EXPECT_LE(norm_rel(got, want), c.tol);
      break;
    case Bound::ElemRel:
      EXPECT_LE(max_elem_rel(got, want), c.tol);
      break;
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, CudaVsCpu, ::testing::ValuesIn(op_cases()),
                         [](const ::testing::TestParamInfo<OpCase>& i) { return i.param.name; });

// --- Philox: the CPU backend's generator (cpu/philox.h, cuRAND's stream) against cuRAND's device one ---

using CudaRandom = Cuda;

// Uniforms are x * 2^-32 + 2^-33 on both sides: the product is exact, so
// even an FMA on the device gives the same float. And lo + w*u is computed
// with the same float operations. Bitwise, at any size and offset.
TEST_F(CudaRandom, UniformsAreBitwiseEqualToTheHostGenerator) {
  for (int64_t n : {int64_t(1), int64_t(7), int64_t(1024), int64_t(1000003)}) {
    SCOPED_TRACE("n = " + std::to_string(n));
    std::vector<std::vector<float>> out[2];
    const Device devs[2] = {cpu(), gpu()};
    for (int k = 0; k < 2; ++k) {
      manual_seed(99);
      Tensor skip = rand_uniform({5}, devs[k]);  // a non-zero offset for what follows
      out[k].push_back(rand_uniform({n}, devs[k]).to_host());
      out[k].push_back(rand_uniform({n}, devs[k], -0.07f, 0.07f).to_host());
    }
    EXPECT_EQ(bitwise_mismatch(out[1][0], out[0][0]), "") << "U(0,1]";
    EXPECT_EQ(bitwise_mismatch(out[1][1], out[0][1]), "") << "U[-0.07, 0.07)";
  }
}

// The device turns cuRAND's Philox words into normals with the CPU
// generator's own operations (cuda/box_muller.h, cpu/philox.cpp's vector
// path): bitwise equal at any size and offset. A CPU without AVX2 draws its
// normals with libm instead (cpu/philox.h): there the bound is libm's
// distance from the vector formulation, 1e-5 * stddev + 2 ulp.
TEST_F(CudaRandom, NormalsAreBitwiseEqualToTheCpuGenerator) {
  const float mean = 0.5f, stddev = 2.f;
  const bool vector_cpu = philox::best_isa() != philox::Isa::Scalar;
  for (int64_t n : {int64_t(1), int64_t(2), int64_t(7), int64_t(100001), int64_t(1024) * 512}) {
    for (int64_t skip_n : {int64_t(0), int64_t(3), int64_t(5)}) {  // offsets 0, 4, 8: draws advance whole blocks
      SCOPED_TRACE("n = " + std::to_string(n) + ", after " + std::to_string(skip_n));
      std::vector<float> out[2];
      const Device devs[2] = {cpu(), gpu()};
      for (int k = 0; k < 2; ++k) {
        manual_seed(7);
        if (skip_n) Tensor skip = randn({skip_n}, devs[k]);
        out[k] = randn({n}, devs[k], mean, stddev).to_host();
      }
      const std::vector<float>&host = out[0], &dev = out[1];
      size_t differ = 0, violations = 0;
      for (size_t i = 0; i < host.size(); ++i) {
        if (std::memcmp(&host[i], &dev[i], sizeof(float)) == 0) continue;
        ++differ;
        const double d = std::fabs(double(dev[i]) - double(host[i]));
        const double ulp = std::fabs(std::nextafter(host[i], INFINITY) - host[i]);
        if (!(d <= 1e-5 * stddev + 2 * ulp)) ++violations;
      }
      if (vector_cpu) EXPECT_EQ(differ, 0u) << differ << " of " << n << " normals differ from the CPU's";
      else EXPECT_EQ(violations, 0u) << "bound |diff| <= 1e-5*stddev + 2 ulp (CPU without AVX2: libm)";
      if (skip_n == 0 && n == 1024 * 512)
        std::cout << "[   INFO   ] normals, n = " << n << ": " << differ << " differ from the CPU's ("
                  << philox::isa_name(philox::best_isa()) << " path)\n";
    }
  }
}

// --- the d2l MLP, same seed on both backends -----------------------------------------------------

// One d2l training setup: Dense(2048, relu) -> Dense(512, relu) -> Dense(1),
// 512 input features, L2Loss, SGD(lr = 0.005), data drawn on the device.
struct MlpRun {
  Device dev;
  int64_t batch;
  std::unique_ptr<Sequential> net = models::make_mlp(models::parse_layer_spec("2048,512"));
  std::unique_ptr<SGD> sgd;

  MlpRun(Device d, int64_t b, uint64_t seed) : dev(d), batch(b) { manual_seed(seed); }
  // Queues one step and its mean loss; never blocks.
  Tensor step() {
    Tensor X = randn({batch, 512}, dev);
    Tensor y = ones({batch}, dev);
    Tensor l = l2_loss((*net)(X), y);
    if (!sgd) sgd = std::make_unique<SGD>(net->parameters(), 0.005f);  // after deferred init
    l.backward();
    sgd->step(batch);
    NoGradGuard ng;
    return mean(l);
  }
};

std::vector<float> mlp_losses(Device d, int steps, int64_t batch) {
  MlpRun run(d, batch, 2024);
  std::vector<float> losses;
  for (int i = 0; i < steps; ++i) losses.push_back(run.step().item());
  return losses;
}

using CudaTraining = Cuda;

TEST_F(CudaTraining, MlpLossesMatchTheCpuFor20StepsWithTf32Off) {
  ScopedTf32 fp32(false);
  const std::vector<float> want = mlp_losses(cpu(), 20, 1024);
  const std::vector<float> got = mlp_losses(gpu(), 20, 1024);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 1e-4 * std::fabs(want[i])) << "step " << i;
  std::cout << "[   INFO   ] loss step 0: cpu " << want.front() << " cuda " << got.front() << "; step 19: cpu "
            << want.back() << " cuda " << got.back() << "\n";
  EXPECT_LT(want.back(), want.front()) << "the model should learn something in 20 steps";
}

#ifdef ASYNCMLP_WITH_CUDA
// Every Dense GEMM of a d2l step runs through cuBLASLt with its epilogue
// (one launch): three forwards, the output layer's weight-and-bias
// gradient, and the two input gradients through a ReLU (DRELU_BGRAD) per
// step, none composed.
TEST_F(CudaTraining, EveryDenseGemmOfAStepIsOneCublasLtLaunch) {
  ScopedTf32 fp32(false);
  auto* be = dynamic_cast<cuda::CudaBackend*>(context(gpu()).backend.get());
  ASSERT_NE(be, nullptr);
  MlpRun run(gpu(), 64, 7);
  (void)run.step().item();  // initialises; plans are made
  const cuda::LtGemms::Stats before = be->lt_stats();
  for (int i = 0; i < 3; ++i) (void)run.step();
  waitall();
  const cuda::LtGemms::Stats after = be->lt_stats();
  if (!env_settings().lt_epilogues) {
    EXPECT_EQ(after.fused, before.fused) << "cuBLASLt is on only with ASYNCMLP_LT=1";
    return;
  }
  EXPECT_EQ(after.composed, before.composed) << "a Dense GEMM found no cuBLASLt plan";
  EXPECT_EQ(after.fused - before.fused, 3u * 6u)
      << "3 forwards + 1 weight-and-bias gradient + 2 input gradients through a ReLU per step";
}
#else
TEST_F(CudaTraining, EveryDenseGemmOfAStepIsOneCublasLtLaunch) { GTEST_SKIP() << "this build has no CUDA backend"; }
#endif

#ifdef ASYNCMLP_WITH_CUDA
// The pass that writes a ReLU mask where cuBLASLt has no plan
// (launch_relu_mask) writes the bits cuBLASLt's RELU_AUX_BIAS writes, for
// the d2l layer and odd sizes: else DRELU_BGRAD would read a wrong mask.
TEST_F(CudaTraining, TheMaskPassWritesCublasLtsReluMask) {
  cuda::DeviceGuard guard(gpu().index);
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  const size_t ws_bytes = size_t(32) << 20;
  void* ws = nullptr;
  ASSERT_EQ(cudaMalloc(&ws, ws_bytes), cudaSuccess);
  {
    cuda::LtGemms lt;
    lt.start(s, ws, ws_bytes, /*on=*/true);
    for (auto [B, in, out] : {std::tuple{64, 512, 2048}, std::tuple{100, 13, 37}, std::tuple{3, 5, 130}}) {
      SCOPED_TRACE(std::to_string(B) + "x" + std::to_string(in) + " -> " + std::to_string(out));
      std::mt19937 rng(B);
      std::normal_distribution<float> nd;
      std::vector<float> x(size_t(B) * in), w(size_t(out) * in), b(out);
      for (auto* v : {&x, &w, &b})
        for (float& f : *v) f = nd(rng);
      const size_t words = relu_mask_words(B, out);
      float *dx, *dw, *db, *dy;
      uint32_t *m_lt, *m_pass;
      for (auto [p, n] : {std::pair{&dx, x.size()}, {&dw, w.size()}, {&db, b.size()}, {&dy, size_t(B) * out}})
        ASSERT_EQ(cudaMalloc(p, n * sizeof(float)), cudaSuccess);
      ASSERT_EQ(cudaMalloc(&m_lt, words * 4), cudaSuccess);
      ASSERT_EQ(cudaMalloc(&m_pass, words * 4), cudaSuccess);
      cudaMemcpy(dx, x.data(), x.size() * 4, cudaMemcpyHostToDevice);
      cudaMemcpy(dw, w.data(), w.size() * 4, cudaMemcpyHostToDevice);
      cudaMemcpy(db, b.data(), b.size() * 4, cudaMemcpyHostToDevice);
      cudaMemset(m_lt, 0, words * 4);
      ASSERT_TRUE(lt.linear_relu_mask(dx, dw, db, dy, m_lt, B, in, out, /*tf32=*/false)) << "no RELU_AUX_BIAS plan";
      cuda::launch_relu_mask(dy, m_pass, B, out, s);
      ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
      std::vector<uint32_t> a(words), p(words);
      cudaMemcpy(a.data(), m_lt, words * 4, cudaMemcpyDeviceToHost);
      cudaMemcpy(p.data(), m_pass, words * 4, cudaMemcpyDeviceToHost);
      const size_t per_row = words / B;
      size_t differ = 0, ones = 0;
      for (int r = 0; r < B; ++r)
        for (int c = 0; c < out; ++c) {
          const size_t i = r * per_row + c / 32;
          const uint32_t bit = 1u << (c % 32);
          differ += (a[i] & bit) != (p[i] & bit);
          ones += (p[i] & bit) != 0;
        }
      EXPECT_EQ(differ, 0u) << "of " << size_t(B) * out << " bits (" << ones << " set by the pass)";
      EXPECT_GT(ones, 0u);
      for (void* q : {(void*)dx, (void*)dw, (void*)db, (void*)dy, (void*)m_lt, (void*)m_pass}) cudaFree(q);
    }
    lt.stop();
  }
  cudaFree(ws);
  cudaStreamDestroy(s);
}
#endif

TEST_F(CudaTraining, Tf32ChangesNothingBeyondOnePercent) {
  manual_seed(3);
  Tensor a = randn({1024, 512}, cpu()), b = randn({2048, 512}, cpu());
  const std::vector<float> want = matmul(a, b, false, /*transpose_b=*/true).to_host();
  Tensor ga = copy_to(a, gpu()), gb = copy_to(b, gpu());
  std::vector<float> with_tf32, without;
  {
    ScopedTf32 on(true);
    with_tf32 = matmul(ga, gb, false, true).to_host();  // to_host: launched before the switch back
  }
  {
    ScopedTf32 off(false);
    without = matmul(ga, gb, false, true).to_host();
  }
  EXPECT_LE(norm_rel(with_tf32, want), 1e-2);
  EXPECT_LE(norm_rel(without, want), 1e-5);
  EXPECT_GT(norm_rel(with_tf32, without), 0.0)
      << "TF32 on gave the FP32 result bit for bit: the math mode was not applied";
  std::cout << "[   INFO   ] GEMM 1024x512 . 512x2048 vs OpenBLAS: TF32 " << norm_rel(with_tf32, want) << ", FP32 "
            << norm_rel(without, want) << " (normwise relative)\n";

  std::vector<float> losses_tf32;
  {
    ScopedTf32 on(true);
    losses_tf32 = mlp_losses(gpu(), 5, 1024);
  }
  const std::vector<float> cpu_losses = mlp_losses(cpu(), 5, 1024);
  for (size_t i = 0; i < cpu_losses.size(); ++i)
    EXPECT_NEAR(losses_tf32[i], cpu_losses[i], 1e-2 * std::fabs(cpu_losses[i])) << "step " << i;
}

// --- memory -------------------------------------------------------------------------------------------

using CudaMemory = Cuda;

TEST_F(CudaMemory, ReportsTheGpuAndItsMemory) {
  size_t free_bytes = 0, total = 0;
  ASSERT_TRUE(device_memory_info(gpu(), &free_bytes, &total));
  EXPECT_GT(total, 0u);
  EXPECT_LE(free_bytes, total);
  EXPECT_FALSE(device_memory_info(cpu(), &free_bytes, &total));
  EXPECT_THROW(context(Device::cuda(cuda_device_count())), DeviceError);
}

TEST_F(CudaMemory, NoCudaMallocAfterWarmUp) {
  MlpRun run(gpu(), 1024, 8);
  run.step().item();  // deferred initialisation; the first buffers
  {
    PausedQueue paused(gpu());  // every buffer of a step held at once: the most any step needs
    Tensor m = run.step();
  }
  waitall();
  const uint64_t after_warm_up = memory_stats(gpu()).raw_alloc_count;
  for (int i = 0; i < 10; ++i) {
    run.step().item();
    EXPECT_EQ(memory_stats(gpu()).raw_alloc_count, after_warm_up) << "a cudaMalloc in step " << i + 3;
  }
}

TEST_F(CudaMemory, BytesInUseReturnToBaselineAfterDropAndWaitall) {
  waitall();
  const size_t base = memory_stats(gpu()).bytes_in_use;
  const size_t x_bytes = 1024 * 512 * sizeof(float), h_bytes = 1024 * 1024 * sizeof(float);
  {
    PausedQueue paused(gpu());
    Tensor x = randn({1024, 512}, gpu());
    Tensor h = relu(matmul(x, x, false, /*transpose_b=*/true));
    Tensor s = sum(h);
    x = h = s = Tensor();  // every handle dropped; the pending ops still hold their buffers
    EXPECT_GE(memory_stats(gpu()).bytes_in_use, base + x_bytes + 2 * h_bytes);
  }
  waitall();
  EXPECT_EQ(memory_stats(gpu()).bytes_in_use, base);
  EXPECT_GE(memory_stats(gpu()).peak_bytes, base + x_bytes + 2 * h_bytes);
}

TEST_F(CudaMemory, OutOfMemoryUnderAPoolLimitIsClearAndRecoverable) {
  Pool& pool = context(gpu()).pool;
  waitall();
  // Cached blocks count as reserved, and the pool frees them and retries before it
  // reports out of memory: with earlier tests' blocks cached, the 1 MiB of headroom
  // below would really be that much more. Give them back first.
  pool.empty_cache();
  const int64_t n = int64_t(16) << 20;  // 64 MiB
  const size_t bytes = size_t(n) * sizeof(float);
  {
    ScopedPoolLimit limit(pool, pool.stats().reserved_bytes + (size_t(1) << 20));
    try {
      Tensor t = empty({n}, gpu());
      FAIL() << "64 MiB were granted with 1 MiB of headroom";
    } catch (const OutOfMemory& e) {
      EXPECT_EQ(e.requested, bytes);
      EXPECT_NE(std::string(e.what()).find(std::to_string(bytes)), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("cuda:0"), std::string::npos) << e.what();
    }
  }
  Tensor t = full({n}, 2.f, gpu());
  EXPECT_EQ(sum(t).item(), 2.f * float(n));
}

TEST_F(CudaMemory, AnImpossibleRequestIsOutOfMemoryAndTheProcessGoesOn) {
  size_t total = 0;
  ASSERT_TRUE(device_memory_info(gpu(), nullptr, &total));
  const int64_t n = int64_t(total / sizeof(float)) * 2;  // twice the GPU
  try {
    Tensor t = empty({n}, gpu());
    FAIL() << "twice the GPU's memory was granted";
  } catch (const OutOfMemory& e) {
    EXPECT_EQ(e.requested, size_t(n) * sizeof(float));
    EXPECT_NE(std::string(e.what()).find(std::to_string(size_t(n) * sizeof(float))), std::string::npos) << e.what();
  }
  Tensor x = full({1000}, 1.f, gpu());
  EXPECT_EQ(sum(x).item(), 1000.f);
}

// --- errors cross the queue ------------------------------------------------------------------------------

using CudaErrors = Cuda;

TEST_F(CudaErrors, NonFiniteValueSurfacesAtTheNextBlockerWithTheOpName) {
  std::vector<float> v(1000, 1.f);
  v[123] = std::numeric_limits<float>::quiet_NaN();
  Tensor x = from_host({1000}, v.data(), gpu());
  check_finite(x, "activations");  // returns at once: the check runs on the worker
  Tensor y = add_scalar(x, 1.f);   // the queue goes on after a failure
  try {
    y.wait_to_read();
    FAIL() << "the failed check was not reported";
  } catch (const KernelError& e) {
    EXPECT_EQ(e.op, "check_finite");
    EXPECT_EQ(e.device, "cuda:0");
    EXPECT_NE(std::string(e.what()).find("index 123"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("activations"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(waitall());  // taken by that blocker, once
  EXPECT_EQ(sum(full({10}, 1.f, gpu())).item(), 10.f);
}

TEST_F(CudaErrors, SynchronousModeReportsTheErrorAtTheCallSite) {
  std::vector<float> v(1000, 1.f);
  v[7] = std::numeric_limits<float>::infinity();
  Tensor x = from_host({1000}, v.data(), gpu());
  x.wait_to_read();
  ScopedBlocking sync(true);
  try {
    check_finite(x, "weights");
    FAIL() << "synchronous mode must throw at the call";
  } catch (const KernelError& e) {
    EXPECT_EQ(e.op, "check_finite");
    EXPECT_NE(std::string(e.what()).find("index 7"), std::string::npos) << e.what();
  }
  Tensor y = add_scalar(x, 1.f);
  EXPECT_EQ(queue_stats(gpu()).depth, 0u) << "a push in synchronous mode returns when its op is done";
  EXPECT_EQ(y.to_host()[0], 2.f);
}

// --- blockers and ordering ------------------------------------------------------------------------------------

using CudaQueue = Cuda;

// The worker only launches; wait_to_read must wait for the GPU itself. A
// chain of large GEMMs takes the GPU far longer than the launches take the
// worker, so if wait_to_read returned after the launch, the next blocker
// would carry the GPU time instead.
TEST_F(CudaQueue, WaitToReadWaitsForTheGpuNotJustTheLaunch) {
  using clock = std::chrono::steady_clock;
  const int64_t n = 4096;
  manual_seed(11);
  Tensor w = scale(randn({n, n}, gpu()), 1.f / 64);  // keeps the values' scale: 4096 * (1/64)^2 = 1
  Tensor y = randn({n, n}, gpu());
  matmul(y, w).wait_to_read();  // cuBLAS loads its kernels
  const auto t0 = clock::now();
  for (int i = 0; i < 50; ++i) y = matmul(y, w);  // ~7 TFLOP
  const auto t1 = clock::now();
  y.wait_to_read();
  const auto t2 = clock::now();
  const float s = sum(y).item();
  const auto t3 = clock::now();
  auto ms = [](clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); };
  std::cout << "[   INFO   ] push " << ms(t1 - t0) << " ms, wait_to_read " << ms(t2 - t1) << " ms, then sum+item "
            << ms(t3 - t2) << " ms\n";
  EXPECT_TRUE(std::isfinite(s));
  EXPECT_GT(ms(t2 - t1), ms(t3 - t2)) << "wait_to_read returned before the GPU finished";
  EXPECT_LT(ms(t1 - t0), ms(t2 - t1)) << "the frontend should queue 50 GEMMs faster than the GPU runs them";
}

TEST_F(CudaQueue, CrossDeviceCopiesWaitForBothQueues) {
  const int64_t n = 1 << 20;
  Tensor on_gpu;
  {
    PausedQueue paused(cpu());
    Tensor c = full({n}, 7.f, cpu());  // not run yet
    on_gpu = copy_to(c, gpu());        // the GPU's worker waits for it
  }
  for (float v : on_gpu.to_host()) ASSERT_EQ(v, 7.f);
  Tensor plus;
  {
    PausedQueue paused(gpu());
    Tensor g = full({n}, 5.f, gpu());
    Tensor back = copy_to(g, cpu());  // queued on the GPU's queue
    plus = add_scalar(back, 1.f);     // on cpu:0, after that copy
  }
  for (float v : plus.to_host()) ASSERT_EQ(v, 6.f);
}

// GPU to GPU: one op on the consumer, its stream waiting on the producer's
// event (cudaMemcpyPeerAsync), no host round trip and no host wait. The
// producer's queue is paused, so the copy must wait for the producer; the
// source tensor is dropped at once (the queued copies keep its block) and
// more work queued on the producer after them.
TEST_F(CudaQueue, PeerCopiesBetweenTwoGpusWaitForTheProducerAndKeepTheSource) {
  if (cuda_device_count() < 2) GTEST_SKIP() << "one GPU visible: a peer copy needs two";
  const Device g1 = Device::cuda(1);
  const int64_t n = (int64_t(1) << 24) + 3;
  Tensor on1, slice1;
  {
    PausedQueue paused(gpu());
    Tensor src = full({n, 1}, 3.f, gpu());
    on1 = copy_to(src, g1);
    slice1 = slice_rows(src, 5, 9, g1);
    src = Tensor();
    Tensor later = full({n, 1}, -1.f, gpu());
  }
  for (float v : on1.to_host()) ASSERT_EQ(v, 3.f);
  for (float v : slice1.to_host()) ASSERT_EQ(v, 3.f);
  Tensor back = copy_to(add_scalar(on1, 1.f), gpu());
  EXPECT_EQ(sum(back).item(), static_cast<float>(4.0 * double(n)));  // double accumulation, one rounding
}

#ifdef ASYNCMLP_WITH_CUDA
// to_host_async pins its host block from the backend's cache: a loss read
// every batch pins memory once, not once per call.
TEST_F(CudaQueue, AsyncCopiesPinMemoryOnceNotPerCall) {
  auto* be = dynamic_cast<cuda::CudaBackend*>(context(gpu()).backend.get());
  ASSERT_NE(be, nullptr);
  Tensor x = full({1}, 2.5f, gpu());
  { HostCopy warm = x.to_host_async(); (void)warm.get(); }
  const auto before = be->host_block_stats();
  for (int i = 0; i < 200; ++i) {
    HostCopy c = add_scalar(x, float(i)).to_host_async();
    ASSERT_EQ(c.get(), std::vector<float>{2.5f + float(i)});
  }
  const auto after = be->host_block_stats();
  EXPECT_EQ(after.allocations, before.allocations) << "cudaHostAlloc per to_host_async";
  EXPECT_GE(after.reuses - before.reuses, 200u);
}
#endif

TEST_F(CudaQueue, HostDeviceRoundTripIsExact) {
  std::mt19937 rng(5);
  // The last size is larger than the pinned staging buffer (64 MiB): copied in chunks.
  for (int64_t n : {int64_t(0), int64_t(1), int64_t(7), int64_t(4096), int64_t(20000003)}) {
    SCOPED_TRACE("n = " + std::to_string(n));
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) {  // every bit pattern: NaN payloads, infinities, -0, denormals
      const uint32_t bits = rng();
      std::memcpy(&x, &bits, sizeof x);
    }
    Tensor c = from_host({n}, v.data(), cpu());
    const std::vector<float> through_tensors = copy_to(copy_to(c, gpu()), cpu()).to_host();
    const std::vector<float> direct = from_host({n}, v.data(), gpu()).to_host();
    ASSERT_EQ(through_tensors.size(), v.size());
    ASSERT_EQ(direct.size(), v.size());
    EXPECT_EQ(0, std::memcmp(through_tensors.data(), v.data(), v.size() * sizeof(float)));
    EXPECT_EQ(0, std::memcmp(direct.data(), v.data(), v.size() * sizeof(float)));
  }
}


// Launched and completed are two points on CUDA: right after a long GEMM
// chain was launched the GPU is still working through it; both counters
// reach the pushed count once it is done.
TEST_F(CudaQueue, LaunchedRunsAheadOfCompleted) {
  const int64_t n = 4096;
  manual_seed(12);
  Tensor w = scale(randn({n, n}, gpu()), 1.f / 64);
  Tensor y = randn({n, n}, gpu());
  matmul(y, w).wait_to_read();
  for (int i = 0; i < 50; ++i) y = matmul(y, w);  // ~7 TFLOP: far longer on the GPU than the launches
  const uint64_t last = queue_stats(gpu()).pushed;
  QueueStats s = queue_stats(gpu());
  for (int spin = 0; s.launched < last && spin < 100000; ++spin) {
    std::this_thread::yield();
    s = queue_stats(gpu());
  }
  ASSERT_EQ(s.launched, last) << "the worker did not launch the chain";
  EXPECT_LT(s.completed, s.launched) << "the GPU finished 7 TFLOP as fast as the worker launched it";
  EXPECT_EQ(s.unlaunched, 0u);
  waitall();
  s = queue_stats(gpu());
  EXPECT_EQ(s.launched, s.pushed);
  EXPECT_EQ(s.completed, s.pushed);
}

// A DeviceTimer on a GPU reads the GPU's time: around a 7 TFLOP chain the
// launches take the host a few milliseconds, the GPU far longer; and the
// timers are not reached until the GPU gets there.
TEST_F(CudaQueue, DeviceTimerMeasuresTheGpuNotTheLaunches) {
  const int64_t n = 4096;
  manual_seed(13);
  Tensor w = scale(randn({n, n}, gpu()), 1.f / 64);
  Tensor y = randn({n, n}, gpu());
  matmul(y, w).wait_to_read();
  const auto t0 = std::chrono::steady_clock::now();
  const DeviceTimer a = DeviceTimer::mark(gpu());
  for (int i = 0; i < 50; ++i) y = matmul(y, w);
  const DeviceTimer b = DeviceTimer::mark(gpu());
  const double queued_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double gpu_s = b.seconds_since(a);
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(b.reached());
  EXPECT_GT(gpu_s, 0.0);
  EXPECT_LE(gpu_s, wall_s);
  EXPECT_GT(gpu_s, 2 * queued_s) << "the GPU's time should dwarf queueing 50 GEMMs";
  // 50 GEMMs of 2·4096³ flops: a rate below 2,000 TFLOP/s (no GPU of this kind is faster).
  EXPECT_LT(50 * 2.0 * n * n * n / gpu_s, 2e15);
}

// to_host_async copies into pinned memory on the stream; ready() answers
// from the op's event, so it is false while the GPU is still busy, and get()
// returns the same values as the synchronous copy.
TEST_F(CudaQueue, AsyncCopyToPinnedMemoryIsReadyWhenTheGpuFinished) {
  const int64_t n = 4096;
  manual_seed(13);
  Tensor w = scale(randn({n, n}, gpu()), 1.f / 64);
  Tensor y = randn({n, n}, gpu());
  matmul(y, w).wait_to_read();
  for (int i = 0; i < 50; ++i) y = matmul(y, w);
  HostCopy c = y.to_host_async();
  EXPECT_FALSE(c.ready()) << "the copy reads ready while the GEMM chain before it runs";
  const std::vector<float>& got = c.get();
  EXPECT_TRUE(c.ready());
  const std::vector<float> expected = y.to_host();
  ASSERT_EQ(got.size(), expected.size());
  EXPECT_EQ(0, std::memcmp(got.data(), expected.data(), got.size() * sizeof(float)));
}

#ifdef ASYNCMLP_WITH_CUDA
// --- an asynchronous fault's message (no GPU needed) ------------------------------------------------

// A fault the context keeps is seen by whichever call comes next: it is a
// DeviceFault, which the queue blames on the op that exposed it, saying it
// may not be the culprit (tests/core/test_queue.cpp); any other failure is a
// plain Error, blamed on the op that met it.
TEST(CudaFaultMessage, AStickyFaultIsADeviceFaultOtherFailuresAreNot) {
  const auto kind = [](int code, const char* status) -> std::string {
    try {
      cuda::throw_failure(__FILE__, __LINE__, "the test's call", status, code);
    } catch (const DeviceFault&) {
      return "DeviceFault";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "one line";
      return "Error";
    }
    return "nothing thrown";
  };
  EXPECT_EQ(kind(cudaErrorIllegalAddress, cudaGetErrorString(cudaErrorIllegalAddress)), "DeviceFault");
  EXPECT_EQ(kind(cudaErrorMemoryAllocation, cudaGetErrorString(cudaErrorMemoryAllocation)), "Error");
  EXPECT_EQ(kind(int(CUBLAS_STATUS_EXECUTION_FAILED), "CUBLAS_STATUS_EXECUTION_FAILED"), "Error");
}

// --- the device guard -------------------------------------------------------------------------------

// A thread that never chose a device: the guard's "previous device" is not
// real, so it must not switch back to it (that would create GPU 0's context).
TEST_F(Cuda, AThreadThatNeverChoseADeviceHasNoContextUntilItUsesOne) {
  bool before = true, after_guard_alone = true;
  std::thread t([&] {
    before = cuda::thread_has_context();
    { cuda::DeviceGuard g(0); }
    after_guard_alone = cuda::thread_has_context();
  });
  t.join();
  EXPECT_FALSE(before);
  EXPECT_FALSE(after_guard_alone) << "the guard alone created a context on a thread that never used the GPU";
}

// A run that uses only cuda:1 leaves GPU 0 without a context (needs two GPUs;
// run in a child process so nothing earlier in this one touched GPU 0).
TEST(CudaGuardDeathTest, UsingOnlyCuda1NeverCreatesGpu0sContext) {
  if (cuda_device_count() < 2) GTEST_SKIP() << "needs two visible GPUs (" << cuda_device_count() << " visible)";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        const std::vector<float> v(1000, 2.f);
        Tensor x = from_host({1000}, v.data(), Device::cuda(1));
        const float s = sum(add_scalar(x, 1.f)).item();
        waitall();
        empty_cache(Device::cuda(1));
        std::exit(s == 3000.f ? (cuda::primary_context_active(0) ? 4 : 0) : 3);
      },
      ::testing::ExitedWithCode(0), "");
}
#else
TEST(CudaGuardDeathTest, UsingOnlyCuda1NeverCreatesGpu0sContext) { GTEST_SKIP() << "this build has no CUDA backend"; }
#endif

}  // namespace
}  // namespace amlp::testing
