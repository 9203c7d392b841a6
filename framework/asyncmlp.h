// asyncmlp.h — the public interface: everything a program needs.
//
//   devices   device.h    Device, parse_device, cuda_device_count
//   tensors   tensor.h    Tensor and its blockers (wait_to_read, to_host, item), HostCopy
//   ops       ops.h       creation, math (differentiable), copies, sgd_update_
//   runtime   runtime.h   waitall, settings (blocking, back-pressure, memory limit),
//                         memory and queue statistics (their records: stats.h), QueuePause
//   errors    error.h     Error, ShapeError, DeviceError, OutOfMemory, KernelError, DeviceFault
//   trace     trace.h     Chrome trace-event JSON of the frontend and every queue
//   layers    nn/         autograd (backward, BackwardPass, NoGradGuard), Dense, ReLU,
//                         Sequential, L2Loss, SGD, DataParallel (replicas, gradients all-reduced)
//
// The engine behind it (framework/core: queues, pools, enqueue, contexts, the
// tape), the backends (framework/cpu, framework/cuda) and the registry that
// picks one per device (framework/registry) are not part of it. What it
// promises is docs/design.md.
//
// Threads (docs/design.md §11). One frontend thread drives each device: the
// first thread that queues an op on a device, or waits for one of its
// tensors, is the only one that may until it ends; then another may take it
// over. Any other thread that queues an op on the device, uses one of its
// tensors in an op, or calls wait_to_read / to_host / item on one, gets
// amlp::Error naming the device and both threads, and nothing is queued. One
// thread may drive every device (DataParallel does). From any thread:
// waitall(), drop_pending(), the settings and statistics of runtime.h,
// HostCopy::ready(), DeviceTimer::reached(). A Tensor or HostCopy object is
// used by one thread at a time, like any C++ object.
//
//   using namespace amlp;
//   Tensor X = randn({1024, 512}, Device::cpu());       // queued, returns at once
//   Sequential net;  net.add(std::make_unique<Dense>(1, Activation::None));
//   Tensor l = L2Loss()(net(X), ones({1024}, X.device()));
//   l.backward();  SGD(net.parameters(), 0.005f).step(1024);
//   float loss = mean(l).item();                        // the only wait
#pragma once
#include "framework/device.h"
#include "framework/error.h"
#include "framework/nn/autograd.h"
#include "framework/nn/checkpoint.h"
#include "framework/nn/data_parallel.h"
#include "framework/nn/dense.h"
#include "framework/nn/l2_loss.h"
#include "framework/nn/relu.h"
#include "framework/nn/sequential.h"
#include "framework/nn/sgd.h"
#include "framework/ops.h"
#include "framework/runtime.h"
#include "framework/tensor.h"
#include "framework/trace.h"
