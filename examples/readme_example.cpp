// readme_example.cpp — the README's example ("Using the library"), built
// against an installed asyncmlp (examples/CMakeLists.txt): ten batches of the
// book's MLP queued on the CPU without a wait, then one waitall().
#include <cstdio>
#include <memory>
#include <vector>

#include "framework/asyncmlp.h"  // the public interface; the engine stays behind it
using namespace amlp;

int main() {
  Device dev = Device::cpu();
  Sequential net;  // Dense(2048, relu) -> Dense(512, relu) -> Dense(1): the book's MLP
  net.add(std::make_unique<Dense>(2048, Activation::ReLU));
  net.add(std::make_unique<Dense>(512, Activation::ReLU));
  net.add(std::make_unique<Dense>(1));
  std::vector<HostCopy> losses;
  for (int i = 0; i < 10; ++i) {
    Tensor X = randn({1024, 512}, dev);              // queued: returns at once
    Tensor l = L2Loss()(net(X), ones({1024}, dev));  // shapes checked here, kernels queued
    l.backward();
    SGD(net.parameters(), 0.005f).step(1024);        // w -= lr * grad / 1024
    losses.push_back(mean(l).to_host_async());       // queued behind the step; nothing waits
  }
  std::printf("ops queued, not run: %llu\n", (unsigned long long)queue_stats(dev).unlaunched);
  waitall();                                         // the only wait
  std::printf("loss %.6f, peak %.1f MB\n", losses.back().get()[0], memory_stats(dev).peak_bytes / 1e6);
}
