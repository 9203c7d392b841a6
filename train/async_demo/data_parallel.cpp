// data_parallel.cpp — one device vs two on the same global batch: the d2l
// MLP trained with one replica per device (DataParallel), each taking half of
// every batch, the gradients all-reduced by queued ops. On CPU devices the
// two replicas share this machine's cores, each GEMM given half of them; on
// two GPUs each replica has a GPU of its own and NCCL reduces.
#include <thread>

#include "train/async_demo/demo.h"

namespace amlp::demo {

namespace {

std::unique_ptr<Block> make_net() {
  auto net = std::make_unique<Sequential>();
  net->add(std::make_unique<Dense>(2048, Activation::ReLU));
  net->add(std::make_unique<Dense>(512, Activation::ReLU));
  net->add(std::make_unique<Dense>(1));
  return net;
}

struct Timing {
  double step_s = 0;                // median time per step
  std::vector<size_t> peak_bytes;   // each device's pool at its peak, over the timed steps
  float loss = 0;                   // after the last step
};

// `steps` training steps of a (batch, features) batch drawn on devs[0], on one
// device (a plain network) or several (DataParallel); medians of `reps`.
Timing time_training(const std::vector<Device>& devs, int64_t batch, int64_t features, int steps, int reps) {
  manual_seed(1);
  std::unique_ptr<Block> net;
  std::unique_ptr<DataParallel> dp;
  std::vector<SGD> sgds;
  if (devs.size() == 1) {
    net = make_net();
    NoGradGuard ng;
    net->forward(zeros({1, features}, devs[0]));
    sgds.emplace_back(net->parameters(), 0.005f);
  } else {
    dp = std::make_unique<DataParallel>(devs, make_net, features);
    for (size_t i = 0; i < dp->size(); ++i) sgds.emplace_back(dp->parameters(i), 0.005f);
  }
  L2Loss loss;
  std::vector<Tensor> last;  // the last step's per-sample losses, one per replica
  auto step = [&] {
    Tensor X = randn({batch, features}, devs[0]), y = ones({batch}, devs[0]);
    std::vector<Tensor> ls;
    if (!dp) {
      ls.push_back(loss(net->forward(X), y));
      ls[0].backward();
    } else {
      const std::vector<Tensor> xs = dp->scatter(X), ys = dp->scatter(y);
      for (size_t i = 0; i < dp->size(); ++i) ls.push_back(loss(dp->replica(i).forward(xs[i]), ys[i]));
      dp->backward(ls);
    }
    for (SGD& s : sgds) {
      s.step(batch);
      s.zero_grad();
    }
    last = ls;
  };
  step();  // warm-up: threads, caches, first allocations
  waitall();
  for (const Device& d : devs) reset_peaks(d);
  std::vector<double> per_step;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    for (int k = 0; k < steps; ++k) step();
    waitall();
    per_step.push_back(since(t0) / steps);
  }
  Timing t;
  t.step_s = median(per_step);
  for (const Device& d : devs) t.peak_bytes.push_back(memory_stats(d).peak_bytes);
  NoGradGuard ng;  // the whole batch's mean loss
  t.loss = (dp ? dp->mean(last) : mean(last[0])).item();
  return t;
}

}  // namespace

void run_data_parallel(const Options& o) {
  const Device first = o.device;
  std::vector<Device> two;
  if (!first.is_cuda()) {
    two = {first, Device::cpu(first.index == 1 ? 0 : 1)};
  } else if (cuda_device_count() >= 2) {
    two = {first, Device::cuda(first.index == 0 ? 1 : 0)};
  }
  const int64_t batch = size_or(o, 1024, 8192), features = 512;
  heading("data-parallel", "the d2l MLP on one device vs one replica per device, the same global batch of " +
                               std::to_string(batch));
  constexpr int kSteps = 5;
  const int rounds = repeats_or(o, 7);  // the two sides alternate; a median of several damps the drift
  if (two.empty()) {  // one GPU: nothing to split across
    const Timing one = time_training({first}, batch, features, kSteps, rounds);
    std::printf("  %-20s %s per step  %8.0f samples/s\n", first.str().c_str(), human(one.step_s, 10).c_str(),
                batch / one.step_s);
    explain({"One GPU is visible: data parallelism needs a second device of the same kind (a GPU and the CPU "
             "cannot all-reduce together), so there is no speed-up to show here.",
             "On a machine with two GPUs this runs one replica on each, with NCCL reducing the gradients."});
    return;
  }
  // One device and two in alternation, so the machine's drift hits both alike;
  // two CPU devices share the cores: each replica's GEMMs get half of them.
  Timing one, par;
  std::vector<double> t_one, t_par;
  int shared_threads = blas_threads();
  for (int r = 0; r < rounds; ++r) {
    one = time_training({first}, batch, features, kSteps, 1);
    t_one.push_back(one.step_s);
    const BlasThreadsShare share(two);
    shared_threads = blas_threads();
    par = time_training(two, batch, features, kSteps, 1);
    t_par.push_back(par.step_s);
  }
  one.step_s = median(t_one);
  par.step_s = median(t_par);
  std::printf("  %-20s %s per step  %8.0f samples/s   peak memory %s\n", first.str().c_str(),
              human(one.step_s, 10).c_str(), batch / one.step_s,
              (std::to_string(one.peak_bytes[0] >> 20) + " MiB").c_str());
  const std::string both = two[0].str() + " + " + two[1].str();
  std::printf("  %-20s %s per step  %8.0f samples/s   peak memory %s, %s   speed-up %.2f×\n", both.c_str(),
              human(par.step_s, 10).c_str(), batch / par.step_s,
              (std::to_string(par.peak_bytes[0] >> 20) + " MiB").c_str(),
              (std::to_string(par.peak_bytes[1] >> 20) + " MiB").c_str(), one.step_s / par.step_s);
  std::printf("  medians of %d rounds, alternated; loss after the last step: %.6g alone, %.6g on two devices (the same data, split)\n", rounds, one.loss,
              par.loss);
  std::vector<std::string> lines = {
      "Each replica runs forward and backward on half the batch on its own queue; each layer's gradients are "
      "summed across the replicas by an all-reduce queued right after that layer's backward, so the last "
      "layer's reduction overlaps the first layer's backward, and the frontend never waits.",
      "Each device holds a whole copy of the weights and the activations of its half of the batch; the first "
      "device also holds the whole batch's data, drawn there once and split."};
  if (!first.is_cuda())
    lines.push_back("Two CPU devices share this machine's " + std::to_string(std::thread::hardware_concurrency()) +
                    " cores (each GEMM on " + std::to_string(shared_threads) +
                    " thread(s)): the same arithmetic on the same cores, so ~1× is the best to expect; what "
                    "remains is the all-reduce's extra passes over the gradients and the second SGD step.");
  explain(lines);
}

}  // namespace amlp::demo
