// autograd.h — reverse-mode differentiation.
//
// An op whose input requires a gradient records a Node on its output
// (core/tensor/tape.h; tensor.h's NoGradGuard turns it off). Calling backward() on
// a result orders the reachable nodes into a tape (detail::tape_of), runs their backward
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

// Runs the backward pass from `root` with head gradient `head` (same shape).
void backward(const Tensor& root, const Tensor& head);

// The same pass one leaf at a time, for whoever acts on a gradient as soon as
// it is queued (data parallelism reduces each parameter's gradient across
// replicas while the earlier layers' backward still runs). The constructor
// checks its arguments and orders the tape; each next_leaf() queues the
// backward ops up to the next leaf whose gradient is complete, writes it and
// returns that leaf (the parameter itself), last layer first; an undefined
// tensor once the pass is done. The graph is released when the pass ends or
// the object goes, whichever comes first.
//
//   BackwardPass p(loss, ones(loss.shape(), loss.device()));
//   for (Tensor w = p.next_leaf(); w.defined(); w = p.next_leaf()) reduce(w.grad());
class BackwardPass {
 public:
  BackwardPass(const Tensor& root, const Tensor& head);
  // With a head of ones (Tensor::backward's): made only if the root's op
  // cannot give its unit gradients itself (Node::unit_backward).
  explicit BackwardPass(const Tensor& root);
  ~BackwardPass();
  BackwardPass(const BackwardPass&) = delete;
  BackwardPass& operator=(const BackwardPass&) = delete;
  Tensor next_leaf();

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace amlp
