// Covers framework/ops/all_reduce.cpp, framework/ops/copy.cpp (slice_rows).
// the data-parallel ops: all_reduce_sum over CPU
// devices (values, bitwise-equal results, the cross-queue waits for the
// producers and for later writers of the inputs, the checks) and slice_rows
// (ranges, devices, checks); then the same on GPUs (NCCL, one GPU and two),
// skipped with the reason where there is none.
#include <chrono>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "framework/core/backend/backend.h"
#include "framework/core/tensor/enqueue.h"
#ifdef ASYNCMLP_WITH_CUDA
#include "framework/cuda/device_guard.h"
#endif
#include "test_util.h"

namespace amlp::testing {
namespace {

// Asynchronous mode whatever the environment says (a push onto a paused
// queue must not wait), and no kernel error left for the next test.
class DataParallelTest : public ::testing::Test {
 protected:
  void TearDown() override { expect_no_kernel_error_left(); }

 private:
  ScopedBlocking async_{false};
};
class AllReduce : public DataParallelTest {};
class SliceRows : public DataParallelTest {};
class AllReduceCuda : public DataParallelTest {};
class SliceRowsCuda : public DataParallelTest {};

Tensor make(const Shape& s, const std::vector<float>& v, Device d) { return from_host(s, v.data(), d); }

// Bit patterns, so -0.f and 0.f differ and the comparison is exact.
std::vector<uint32_t> bits(const std::vector<float>& v) {
  std::vector<uint32_t> b(v.size());
  if (!v.empty()) std::memcpy(b.data(), v.data(), v.size() * sizeof(float));
  return b;
}

// xs[0] + xs[1] + ... per element, added in that order in float.
std::vector<float> sum_in_order(const std::vector<std::vector<float>>& xs) {
  std::vector<float> y = xs[0];
  for (size_t j = 1; j < xs.size(); ++j)
    for (size_t i = 0; i < y.size(); ++i) y[i] += xs[j][i];
  return y;
}

// Values of mixed magnitudes, so the order of the additions shows in the bits.
std::vector<float> mixed_values(std::mt19937& rng, int64_t n) {
  std::vector<float> v = uniform_values(rng, n);
  for (size_t i = 0; i < v.size(); i += 3) v[i] *= 1e4f;
  return v;
}

// A tensor of `value`s on d whose writer has completed.
Tensor ready(const Shape& s, float value, Device d) {
  Tensor t = full(s, value, d);
  t.wait_to_read();
  return t;
}

std::vector<float> filled(const Shape& s, float value) { return std::vector<float>(numel(s), value); }

// Whether op `seq` of d's queue completes within `window`. For an op that
// must not complete while what it waits for is held back: the window gives a
// missing dependency the time to show (no assertion needs the op to be slow).
bool completes_within(Device d, uint64_t seq, std::chrono::milliseconds window = std::chrono::milliseconds(50)) {
  const auto until = std::chrono::steady_clock::now() + window;
  while (std::chrono::steady_clock::now() < until) {
    if (queue_stats(d).completed >= seq) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return queue_stats(d).completed >= seq;
}

// Ops pushed so far on each device's queue, to show a rejected call queued nothing.
std::vector<uint64_t> pushed(const std::vector<Device>& ds) {
  std::vector<uint64_t> p;
  for (Device d : ds) p.push_back(queue_stats(d).pushed);
  return p;
}

// `call` throws E whose message holds every string of `named`, and queues nothing on `ds`.
template <class E>
void expect_rejected(const std::function<void()>& call, const std::vector<std::string>& named,
                     const std::vector<Device>& ds) {
  const std::vector<uint64_t> before = pushed(ds);
  try {
    call();
    ADD_FAILURE() << "nothing was thrown";
  } catch (const E& e) {
    for (const std::string& s : named) EXPECT_NE(std::string(e.what()).find(s), std::string::npos) << e.what();
  }
  EXPECT_EQ(pushed(ds), before) << "a rejected call queued work";
}

// --- all_reduce_sum on CPU devices ---------------------------------------------------

TEST_F(AllReduce, SumsOverTwoAndThreeCpuDevicesWithBitwiseEqualResults) {
  std::mt19937 rng(11);
  const Shape shape{37, 333};  // 12321 elements: several of the CPU kernel's chunks
  for (int k : {2, 3}) {
    SCOPED_TRACE(std::to_string(k) + " devices");
    std::vector<std::vector<float>> values;
    std::vector<Tensor> xs;
    for (int i = 0; i < k; ++i) {
      values.push_back(mixed_values(rng, numel(shape)));
      xs.push_back(make(shape, values.back(), Device::cpu(i)));
    }
    const std::vector<Tensor> ys = all_reduce_sum(xs);
    ASSERT_EQ(ys.size(), static_cast<size_t>(k));
    const std::vector<uint32_t> want = bits(sum_in_order(values));
    for (int i = 0; i < k; ++i) {
      EXPECT_EQ(ys[i].device(), Device::cpu(i));
      EXPECT_EQ(ys[i].shape(), shape);
      EXPECT_NE(storage(ys[i]), storage(xs[i])) << "the result must be a new tensor";
      EXPECT_EQ(bits(ys[i].to_host()), want) << "result #" << i << " is not xs[0] + xs[1] + ... bit for bit";
    }
    for (int i = 0; i < k; ++i) EXPECT_EQ(bits(xs[i].to_host()), bits(values[i])) << "input #" << i << " changed";
  }
}

// The reduction on cpu:0 reads xs[1] while cpu:1, which produces it, is
// paused: it must wait for that write (a read waits for the buffer's last
// writer on another queue). xs[1] holds 1s before the paused write of 5s, so
// a reduction that did not wait would sum the 1s.
TEST_F(AllReduce, WaitsForTheProducerOnAnotherQueue) {
  const Device d0 = Device::cpu(0), d1 = Device::cpu(1);
  const Shape shape{4, 8};
  Tensor x0 = ready(shape, 2.f, d0), x1 = ready(shape, 1.f, d1), fives = ready(shape, 5.f, d1);
  std::vector<Tensor> ys;
  uint64_t reduce_seq = 0;
  {
    QueuePause hold(d1);
    copy_(x1, fives);  // queued on cpu:1, cannot start
    ys = all_reduce_sum({x0, x1});
    reduce_seq = queue_stats(d0).pushed;  // the reduction is cpu:0's last op
    EXPECT_FALSE(completes_within(d0, reduce_seq)) << "cpu:0's all_reduce completed before its input was written";
    EXPECT_EQ(queue_stats(d0).unlaunched, 1u);
  }
  EXPECT_EQ(ys[0].to_host(), filled(shape, 7.f));
  EXPECT_EQ(ys[1].to_host(), filled(shape, 7.f));
  EXPECT_GE(queue_stats(d0).completed, reduce_seq);
}

// A write of xs[1] queued after the reduction must wait for cpu:0's read of
// it (a write waits for other queues' uses), even while cpu:0 is paused and
// the write's own queue is free to run it at once.
TEST_F(AllReduce, ALaterWriteOfAnInputWaitsForTheReduction) {
  const Device d0 = Device::cpu(0), d1 = Device::cpu(1);
  const Shape shape{3, 5};
  Tensor x0 = ready(shape, 1.f, d0), x1 = ready(shape, 2.f, d1), other = ready(shape, 100.f, d1);
  std::vector<Tensor> ys;
  {
    QueuePause hold(d0);
    ys = all_reduce_sum({x0, x1});
    copy_(x1, other);  // overwrites xs[1] in place on cpu:1
    EXPECT_FALSE(completes_within(d1, queue_stats(d1).pushed))
        << "the overwrite on cpu:1 completed while cpu:0 had not read the old values";
  }
  EXPECT_EQ(ys[0].to_host(), filled(shape, 3.f)) << "the reduction saw the later write";
  EXPECT_EQ(ys[1].to_host(), filled(shape, 3.f));
  EXPECT_EQ(x1.to_host(), filled(shape, 100.f));
}

TEST_F(AllReduce, OneTensorGivesACopyOnItsDevice) {
  const std::vector<float> v{1.f, -0.f, 3.5f, -7.25f, 1e-30f, 6.f};
  for (Device d : {Device::cpu(0), Device::cpu(2)}) {
    SCOPED_TRACE(d.str());
    Tensor x = make({2, 3}, v, d);
    const std::vector<Tensor> ys = all_reduce_sum({x});
    ASSERT_EQ(ys.size(), 1u);
    EXPECT_EQ(ys[0].device(), d);
    EXPECT_EQ(ys[0].shape(), (Shape{2, 3}));
    EXPECT_NE(storage(ys[0]), storage(x)) << "a copy, not the input itself";
    EXPECT_EQ(bits(ys[0].to_host()), bits(v));
  }
}

TEST_F(AllReduce, EmptyTensorsReduceToEmptyTensors) {
  const std::vector<Tensor> ys = all_reduce_sum({zeros({0, 4}, Device::cpu(0)), zeros({0, 4}, Device::cpu(1))});
  ASSERT_EQ(ys.size(), 2u);
  for (const Tensor& y : ys) {
    EXPECT_EQ(y.shape(), (Shape{0, 4}));
    EXPECT_TRUE(y.to_host().empty());
  }
}

TEST_F(AllReduce, BadInputsThrowAtTheCallSiteAndQueueNothing) {
  const Device d0 = Device::cpu(0), d1 = Device::cpu(1), d2 = Device::cpu(2);
  Tensor a = ones({2, 3}, d0), b = ones({2, 3}, d1), b2 = ones({2, 3}, d1), c = ones({2, 3}, d2);
  Tensor t = ones({3, 2}, d1), c3 = ones({2, 3, 1}, d2);
  waitall();
  const std::vector<Device> all{d0, d1, d2};
  expect_rejected<Error>([] { all_reduce_sum({}); }, {"no tensors"}, all);
  expect_rejected<Error>([&] { all_reduce_sum({a, Tensor(), c}); }, {"#1", "undefined"}, all);
  expect_rejected<ShapeError>([&] { all_reduce_sum({a, t}); }, {"(2, 3)", "(3, 2)"}, all);
  expect_rejected<ShapeError>([&] { all_reduce_sum({a, b, c3}); }, {"(2, 3)", "(2, 3, 1)"}, all);
  expect_rejected<DeviceError>([&] { all_reduce_sum({a, b, b2}); }, {"cpu:1", "twice"}, all);
  expect_rejected<DeviceError>([&] { all_reduce_sum({a, a}); }, {"cpu:0", "twice"}, all);
  // The types are exact where it matters: an empty or undefined input is neither a shape nor a device error.
  try {
    all_reduce_sum({});
  } catch (const ShapeError&) {
    ADD_FAILURE() << "an empty list is not a ShapeError";
  } catch (const DeviceError&) {
    ADD_FAILURE() << "an empty list is not a DeviceError";
  } catch (const Error&) {
  }
}

// A CPU device has no collectives (backend.h): its reduction is a kernel
// that reads every device's tensor, and the backend says so by a null
// collectives() rather than by methods that only throw.
TEST_F(AllReduce, CpuDevicesHaveNoCollectivesButEveryKernelTheyNeed) {
  Backend& be = *context(Device::cpu(0)).backend;
  EXPECT_EQ(be.collectives(), nullptr);
  EXPECT_NE(be.kernels.sum_n, nullptr);
  EXPECT_NE(be.kernels.dense_forward, nullptr) << "the composed default (core/backend/kernels.h)";
  EXPECT_NE(be.kernels.dense_grad_weight, nullptr);
  EXPECT_NE(be.kernels.sgd_update_multi, nullptr);
}

TEST_F(AllReduce, SupportedSaysWhyNot) {
  std::string why = "stale";
  EXPECT_TRUE(all_reduce_supported({Device::cpu(0), Device::cpu(1), Device::cpu(2)}, &why));
  EXPECT_EQ(why, "");
  EXPECT_TRUE(all_reduce_supported({Device::cpu(3)}));
  EXPECT_FALSE(all_reduce_supported({}, &why));
  EXPECT_NE(why.find("no devices"), std::string::npos) << why;
  EXPECT_FALSE(all_reduce_supported({Device::cpu(1), Device::cpu(0), Device::cpu(1)}, &why));
  EXPECT_NE(why.find("cpu:1 appears twice"), std::string::npos) << why;
  for (const std::vector<Device>& mix : {std::vector<Device>{Device::cuda(0), Device::cpu(0)},
                                         std::vector<Device>{Device::cpu(0), Device::cuda(0)}}) {
    EXPECT_FALSE(all_reduce_supported(mix, &why));
    EXPECT_EQ(why, "devices cpu:0 and cuda:0 cannot be reduced together: all CPU or all CUDA");
  }
  // Several GPUs: NCCL's, where the build has it. The build alone decides: no GPU is needed to ask.
  const bool several = all_reduce_supported({Device::cuda(0), Device::cuda(1)}, &why);
#if defined(ASYNCMLP_WITH_NCCL)
  EXPECT_TRUE(several) << why;
  EXPECT_TRUE(all_reduce_supported({Device::cuda(0)}));
#elif defined(ASYNCMLP_WITH_CUDA)
  EXPECT_FALSE(several);
  EXPECT_EQ(why, "this build has no NCCL (nccl.h / libnccl not found): data parallelism is limited to CPU devices");
  EXPECT_TRUE(all_reduce_supported({Device::cuda(0)})) << "one GPU needs no NCCL: a copy";
#else
  EXPECT_FALSE(several);
  EXPECT_NE(why.find("no CUDA backend"), std::string::npos) << why;
  EXPECT_FALSE(all_reduce_supported({Device::cuda(0)}));
#endif
}

// --- slice_rows ----------------------------------------------------------------------

std::vector<float> iota(int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i) + 0.5f;
  return v;
}

// Rows [b, e) of a row-major host array with `row` elements per row.
std::vector<float> rows_of(const std::vector<float>& v, int64_t row, int64_t b, int64_t e) {
  return std::vector<float>(v.begin() + b * row, v.begin() + e * row);
}

TEST_F(SliceRows, CopiesTheRowsOfTensorsOfAnyRank) {
  const Device d = Device::cpu(0);
  struct Case {
    Shape shape;
    int64_t begin, end;
  };
  for (const Case& c : {Case{{5, 3}, 0, 5}, Case{{5, 3}, 1, 3}, Case{{5, 3}, 4, 5}, Case{{5, 3}, 2, 2},
                        Case{{5, 3}, 5, 5}, Case{{5, 3}, 0, 0}, Case{{6}, 2, 5}, Case{{4, 2, 3}, 1, 3},
                        Case{{0, 3}, 0, 0}, Case{{3, 0}, 1, 2}}) {
    SCOPED_TRACE(shape_str(c.shape) + " [" + std::to_string(c.begin) + ", " + std::to_string(c.end) + ")");
    const std::vector<float> v = iota(numel(c.shape));
    Tensor x = make(c.shape, v, d);
    Tensor y = slice_rows(x, c.begin, c.end, d);
    Shape want = c.shape;
    want[0] = c.end - c.begin;
    EXPECT_EQ(y.shape(), want);
    EXPECT_EQ(y.device(), d);
    const int64_t row = c.shape[0] ? numel(c.shape) / c.shape[0] : 0;
    EXPECT_EQ(y.to_host(), rows_of(v, row, c.begin, c.end));
  }
}

// Onto another CPU device: one op, on the destination's queue, that waits for
// the source's producer (paused on cpu:0; the source held other values before).
TEST_F(SliceRows, OntoAnotherCpuDeviceWithOneOpThere) {
  const Device d0 = Device::cpu(0), d1 = Device::cpu(1);
  const std::vector<float> v = iota(24);
  Tensor x = full({6, 4}, -1.f, d0);
  Tensor src = make({6, 4}, v, d0);
  src.wait_to_read();
  waitall();
  Tensor y;
  {
    QueuePause hold(d0);
    copy_(x, src);
    const std::vector<uint64_t> before = pushed({d0, d1});
    y = slice_rows(x, 2, 5, d1);
    EXPECT_EQ(pushed({d0, d1}), (std::vector<uint64_t>{before[0], before[1] + 1})) << "one op, on cpu:1";
    EXPECT_FALSE(completes_within(d1, before[1] + 1)) << "the slice completed before its source was written";
  }
  EXPECT_EQ(y.device(), d1);
  EXPECT_EQ(y.shape(), (Shape{3, 4}));
  EXPECT_EQ(y.to_host(), rows_of(v, 4, 2, 5));
}

TEST_F(SliceRows, BadRangesThrowNamingShapeAndRange) {
  const Device d0 = Device::cpu(0), d1 = Device::cpu(1);
  Tensor x = ones({4, 2}, d0);
  Tensor scalar = sum(x);
  waitall();
  const std::vector<Device> ds{d0, d1};
  for (auto [b, e] : {std::pair<int64_t, int64_t>{-1, 2}, {3, 2}, {0, 5}, {5, 5}, {-2, -1}}) {
    SCOPED_TRACE("[" + std::to_string(b) + ", " + std::to_string(e) + ")");
    const std::string range = "[" + std::to_string(b) + ", " + std::to_string(e) + ")";
    expect_rejected<ShapeError>([&, b = b, e = e] { slice_rows(x, b, e, d1); }, {"(4, 2)", range}, ds);
  }
  expect_rejected<ShapeError>([&] { slice_rows(scalar, 0, 0, d0); }, {"1-D", "()"}, ds);
  expect_rejected<Error>([&] { slice_rows(Tensor(), 0, 0, d0); }, {"undefined"}, ds);
}

// --- GPUs -----------------------------------------------------------------------------

// One GPU: a single-rank NCCL all-reduce where the build has NCCL, else a copy.
TEST_F(AllReduceCuda, OneGpu) {
  SKIP_WITHOUT_GPU();
  std::mt19937 rng(21);
  const std::vector<float> v = mixed_values(rng, 5000);
  Tensor x = make({50, 100}, v, Device::cuda(0));
  const std::vector<Tensor> ys = all_reduce_sum({x});
  ASSERT_EQ(ys.size(), 1u);
  EXPECT_EQ(ys[0].device(), Device::cuda(0));
  EXPECT_EQ(ys[0].shape(), (Shape{50, 100}));
  EXPECT_NE(storage(ys[0]), storage(x));
  EXPECT_EQ(bits(ys[0].to_host()), bits(v));
  // Again over the same (cached) communicator, on a result still in flight.
  const std::vector<Tensor> again = all_reduce_sum({scale(ys[0], 2.f)});
  std::vector<float> twice = v;
  for (float& f : twice) f *= 2.f;
  EXPECT_EQ(bits(again[0].to_host()), bits(twice));
}

TEST_F(AllReduceCuda, TwoGpus) {
  SKIP_WITHOUT_GPU();
  if (cuda_device_count() < 2) GTEST_SKIP() << "one GPU visible: the two-GPU all-reduce needs two";
  std::string why;
  if (!all_reduce_supported({Device::cuda(0), Device::cuda(1)}, &why)) GTEST_SKIP() << why;
  std::mt19937 rng(22);
  const Shape shape{64, 257};
  std::vector<std::vector<float>> values{mixed_values(rng, numel(shape)), mixed_values(rng, numel(shape))};
  for (int round = 0; round < 2; ++round) {  // the second over the cached communicators
    SCOPED_TRACE("round " + std::to_string(round));
    const std::vector<Tensor> ys =
        all_reduce_sum({make(shape, values[0], Device::cuda(0)), make(shape, values[1], Device::cuda(1))});
    ASSERT_EQ(ys.size(), 2u);
    EXPECT_EQ(ys[0].device(), Device::cuda(0));
    EXPECT_EQ(ys[1].device(), Device::cuda(1));
    const std::vector<uint32_t> want = bits(sum_in_order(values));  // a + b: one rounding, either order
    EXPECT_EQ(bits(ys[0].to_host()), want);
    EXPECT_EQ(bits(ys[1].to_host()), want);
  }
}

TEST_F(AllReduceCuda, MixingCpuAndCudaThrowsAndQueuesNothing) {
  SKIP_WITHOUT_GPU();
  Tensor g = ones({2, 2}, Device::cuda(0)), c = ones({2, 2}, Device::cpu(0));
  waitall();
  expect_rejected<DeviceError>(
      [&] { all_reduce_sum({g, c}); },
      {"all_reduce_sum: devices cpu:0 and cuda:0 cannot be reduced together: all CPU or all CUDA"},
      {Device::cuda(0), Device::cpu(0)});
}

#ifdef ASYNCMLP_WITH_CUDA
// all_reduce_supported looks at the build and the devices' kinds only: asking
// about GPUs makes no CUDA context.
TEST_F(AllReduceCuda, SupportedMakesNoCudaContext) {
  SKIP_WITHOUT_GPU();
  if (cuda::primary_context_active(0)) GTEST_SKIP() << "cuda:0's context exists already in this process";
  std::string why;
  (void)all_reduce_supported({Device::cuda(0), Device::cuda(1)}, &why);
  EXPECT_FALSE(all_reduce_supported({Device::cuda(0), Device::cpu(0)}, &why));
  EXPECT_NE(why.find("all CPU or all CUDA"), std::string::npos) << why;
  EXPECT_FALSE(cuda::primary_context_active(0)) << "all_reduce_supported made a CUDA context";
}
#endif

// The CUDA sum_n (more inputs than one launch takes) against the CPU's, bit for bit.
TEST_F(AllReduceCuda, SumNMatchesTheCpuBitwise) {
  SKIP_WITHOUT_GPU();
  std::mt19937 rng(23);
  const int k = 11;
  const Shape shape{3001};
  std::vector<std::vector<float>> values;
  for (int j = 0; j < k; ++j) values.push_back(mixed_values(rng, numel(shape)));
  std::vector<std::vector<float>> got;
  for (Device d : {Device::cpu(0), Device::cuda(0)}) {
    std::vector<Tensor> xs;
    for (const auto& v : values) xs.push_back(make(shape, v, d));
    std::vector<const Tensor*> reads;
    for (const Tensor& x : xs) reads.push_back(&x);
    Tensor y = detail::alloc(shape, context(d));
    const size_t n = static_cast<size_t>(numel(shape));
    detail::enqueue(context(d), "test_sum_n", reads, {&y}, {n}, [](Backend& be, const OpArgs& a) {
      std::vector<const float*> in;
      for (size_t j = 0; j < a.reads(); ++j) in.push_back(a.in(j));
      be.kernels.sum_n(be, in.data(), static_cast<int>(in.size()), a.out(0), a.scalar(0));
    });
    got.push_back(y.to_host());
  }
  EXPECT_EQ(bits(got[0]), bits(sum_in_order(values)));
  EXPECT_EQ(bits(got[1]), bits(got[0]));
}

TEST_F(SliceRowsCuda, BetweenCpuAndCudaAndOnOneGpu) {
  SKIP_WITHOUT_GPU();
  const Device gpu = Device::cuda(0), cpu = Device::cpu(0);
  const std::vector<float> v = iota(7 * 5);
  Tensor on_cpu = make({7, 5}, v, cpu), on_gpu = make({7, 5}, v, gpu);
  waitall();
  struct Case {
    Tensor* x;
    Device to;
    int64_t begin, end;
  };
  for (const Case& c : {Case{&on_cpu, gpu, 2, 6}, Case{&on_gpu, cpu, 1, 4}, Case{&on_gpu, gpu, 3, 7},
                        Case{&on_gpu, cpu, 4, 4}}) {
    SCOPED_TRACE(c.x->device().str() + " -> " + c.to.str() + " [" + std::to_string(c.begin) + ", " +
                 std::to_string(c.end) + ")");
    const Device gpu_side = gpu;  // the copy runs on the GPU's queue, whichever side it is
    const uint64_t before = queue_stats(gpu_side).pushed;
    Tensor y = slice_rows(*c.x, c.begin, c.end, c.to);
    EXPECT_EQ(queue_stats(gpu_side).pushed, before + 1);
    EXPECT_EQ(y.device(), c.to);
    EXPECT_EQ(y.shape(), (Shape{c.end - c.begin, 5}));
    EXPECT_EQ(y.to_host(), rows_of(v, 5, c.begin, c.end));
  }
}

}  // namespace
}  // namespace amlp::testing
