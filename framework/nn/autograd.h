// autograd.h — reverse-mode differentiation.
//
// An op whose input requires a gradient records a Node on its output. Calling
// backward() on a result orders the reachable nodes into a tape (an explicit
// stack, no recursion that grows with the graph), runs their backward
// functions in reverse — each queues ordinary ops — and writes the
// gradients of the leaves (Gluon's grad_req='write': each backward replaces
// them). The graph is released afterwards.
//
//   Tensor w = randn({4, 3}, dev).requires_grad_();
//   Tensor l = sum(matmul(x, w)); l.backward();  w.grad() → (4, 3)
#pragma once
#include <memory>
#include <vector>

#include "framework/tensor.h"

namespace amlp {

bool grad_enabled();

// Disables recording on this thread for its lifetime (evaluation, updates).
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool prev_;
};


// Runs the backward pass from `root` with head gradient `head` (same shape).
void backward(const Tensor& root, const Tensor& head);

}  // namespace amlp
