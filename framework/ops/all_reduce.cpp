// all_reduce.cpp — all_reduce_sum and all_reduce_supported (ops.h), the sum
// across devices for data parallelism. CPU devices: one op per device that
// reads every input (the backends' sum_n); CUDA devices: one NCCL rank per
// device, launched by its worker (the backend's collectives: collective_comms
// and all_reduce_nccl, core/backend/collectives.h).
#include <array>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "framework/ops/op.h"

namespace amlp {

using namespace ops;

namespace {

#ifdef ASYNCMLP_WITH_NCCL
constexpr bool kNccl = true;
#else
constexpr bool kNccl = false;
#endif

// Why all_reduce_sum cannot reduce over `ds`, or "" when it can. Only the
// devices' kinds and the build count: no CUDA call, no context made.
std::string unsupported(const std::vector<Device>& ds) {
  if (ds.empty()) return "no devices to reduce over";
  for (size_t i = 0; i < ds.size(); ++i) {
    for (size_t j = 0; j < i; ++j)
      if (ds[j] == ds[i])
        return detail::concat("device ", ds[i].str(), " appears twice (#", j, " and #", i, "): one tensor per device");
    if (ds[i].is_cuda() != ds[0].is_cuda()) {
      const Device& cpu = ds[0].is_cuda() ? ds[i] : ds[0];
      const Device& gpu = ds[0].is_cuda() ? ds[0] : ds[i];
      return detail::concat("devices ", cpu.str(), " and ", gpu.str(),
                            " cannot be reduced together: all CPU or all CUDA");
    }
  }
  if (!ds[0].is_cuda()) return "";
  if (!built_with_cuda()) return "this build has no CUDA backend (configure with -DASYNCMLP_CUDA=ON)";
  if (!kNccl && ds.size() > 1)
    return "this build has no NCCL (nccl.h / libnccl not found): data parallelism is limited to CPU devices";
  return "";
}

// CPU devices: ys[i] is written on device i by a kernel that reads every
// xs[j]; each read waits for xs[j]'s producer on its queue, and a later write
// of xs[j] waits for this read (enqueue's cross-queue dependencies).
void reduce_on_cpus(const std::vector<Tensor>& xs, std::vector<Tensor>& ys) {
  std::vector<const Tensor*> reads;
  reads.reserve(xs.size());
  for (const Tensor& x : xs) reads.push_back(&x);
  const size_t n = count(xs[0]);
  for (size_t i = 0; i < xs.size(); ++i)
    enqueue(ctx_of(xs[i]), {"all_reduce", kCollective}, reads, {&ys[i]}, {n}, [](Backend& be, const OpArgs& a) {
      std::array<const float*, kMaxCpuDevices> in{};  // distinct CPU devices: at most kMaxCpuDevices
      for (size_t j = 0; j < a.reads(); ++j) in[j] = a.in(j);
      be.kernels.sum_n(be, in.data(), static_cast<int>(a.reads()), a.out(0), a.scalar(0));
    });
}

#ifdef ASYNCMLP_WITH_NCCL
// CUDA devices: rank i's ncclAllReduce on device i's stream. Each op reads
// only its own xs[i]: NCCL joins the ranks on the GPUs.
void reduce_with_nccl(const std::vector<Tensor>& xs, std::vector<Tensor>& ys) {
  std::vector<int> gpus;
  for (const Tensor& x : xs) gpus.push_back(x.device().index);
  Collectives* col = ctx_of(xs[0]).backend->collectives();
  if (!col) throw DeviceError("all_reduce_sum: " + xs[0].device().str() + " has no collectives");
  const std::vector<void*> comms = col->collective_comms(gpus);
  if (comms.size() != gpus.size()) throw DeviceError("all_reduce_sum: " + xs[0].device().str() + " has no NCCL communicators");
  const size_t n = count(xs[0]);
  // Every communicator must see its collectives in one order: the ranks of
  // two all-reduces queued from two threads must not interleave.
  static std::mutex order_mu;
  std::vector<std::pair<Queue*, uint64_t>> queued;
  {
    std::lock_guard<std::mutex> lk(order_mu);
    Queue::DeferSyncWait defer;  // a rank completes only once every rank is queued
    for (size_t i = 0; i < xs.size(); ++i) {
      DeviceContext& c = ctx_of(xs[i]);
      const uint64_t seq = enqueue(c, {"all_reduce", kCollective}, {&xs[i]}, {&ys[i]}, {n, pointer_bits(comms[i])},
                                   [](Backend& be, const OpArgs& a) {
        be.collectives()->all_reduce_nccl(a.in(0), a.out(0), a.scalar(0), a.scalar_ptr<void>(1));  // a GPU's: never null
      });
      queued.push_back({&current_queue(c), seq});
    }
  }
  for (const auto& [q, seq] : queued)
    if (q->blocking()) q->wait_for(seq);
}
#endif

}  // namespace

bool all_reduce_supported(const std::vector<Device>& devices, std::string* why) {
  std::string reason = unsupported(devices);
  if (why) *why = reason;
  return reason.empty();
}

std::vector<Tensor> all_reduce_sum(const std::vector<Tensor>& xs) {
  if (xs.empty()) throw Error("all_reduce_sum: no tensors to reduce");
  std::vector<Device> devices;
  for (size_t i = 0; i < xs.size(); ++i) {
    if (!xs[i].defined()) throw Error(detail::concat("all_reduce_sum: tensor #", i, " is undefined"));
    if (xs[i].shape() != xs[0].shape())
      throw ShapeError(detail::concat("all_reduce_sum: shapes ", shape_str(xs[0].shape()), " (#0) and ",
                                      shape_str(xs[i].shape()), " (#", i, ") differ"));
    devices.push_back(xs[i].device());
  }
  if (const std::string why = unsupported(devices); !why.empty()) throw DeviceError("all_reduce_sum: " + why);
  const bool cuda = devices[0].is_cuda();
  if (xs.size() == 1 && !(cuda && kNccl)) return {copy_to(xs[0], devices[0])};
  // Every output first: an allocation that fails must leave nothing queued
  // (on CUDA, a rank queued alone would wait for the others forever).
  std::vector<Tensor> ys;
  ys.reserve(xs.size());
  for (const Tensor& x : xs) ys.push_back(alloc(x.shape(), ctx_of(x)));
#ifdef ASYNCMLP_WITH_NCCL
  if (cuda) {
    reduce_with_nccl(xs, ys);
    return ys;
  }
#endif
  reduce_on_cpus(xs, ys);
  return ys;
}

}  // namespace amlp
