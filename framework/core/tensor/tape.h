// tape.h — what ops record for reverse mode, and the walk that orders it.
//
// An op whose input requires a gradient attaches a Node to its output: the
// inputs its backward needs and the function that maps dL/d(output) to
// dL/d(input_i). Every op records here, so the tape sits below the ops; the
// backward pass that runs it (nn/autograd.h) queues ops and sits above them.
//
//   if (detail::any_requires_grad({&a, &b}))
//     detail::record(y, "add", {a, b}, [](const Tensor& g) { return std::vector<Tensor>{g, g}; });
//   std::vector<std::shared_ptr<TensorImpl>> tape = detail::tape_of(loss);  // loss last
#pragma once
#include <functional>
#include <initializer_list>
#include <memory>
#include <vector>

#include "framework/tensor.h"

namespace amlp {

struct ReluHandoff;  // ops/linalg.cpp

struct Node {
  const char* name = nullptr;
  std::vector<Tensor> inputs;  // what the backward needs (and where grads go)
  // Given dL/d(output), returns dL/d(input_i) for each input (undefined where
  // an input needs none).
  std::function<std::vector<Tensor>(const Tensor& grad_out)> backward;
  // Optional: dL/d(input_i) for a head of ones, made by the forward's own
  // kernel (l2_loss writes its gradient beside the loss). A backward pass
  // from a unit head (Tensor::backward, BackwardPass(root)) calls it at the
  // root instead of queueing the ones and a backward op.
  std::function<std::vector<Tensor>()> unit_backward;
  // Optional, on an op that ends in a ReLU of its own (linear_relu): what
  // the op consuming its output needs to fold the ReLU's backward, and this
  // op's bias gradient, into its input-gradient GEMM (ops/linalg.cpp).
  std::shared_ptr<ReluHandoff> relu;

  // Frees the nodes only this one holds (its inputs' nodes, theirs, ...) one
  // after another, not by recursion: a graph of 100,000 layers dropped
  // without a backward pass would otherwise overflow the stack.
  ~Node();
};

// grad_enabled() and NoGradGuard: framework/tensor.h (public).

namespace detail {
// Called by ops: attaches a node to `out` if any input requires a gradient.
void record(Tensor& out, const char* name, std::vector<Tensor> inputs,
            std::function<std::vector<Tensor>(const Tensor&)> backward,
            std::function<std::vector<Tensor>()> unit_backward = nullptr);
bool any_requires_grad(std::initializer_list<const Tensor*> ts);
// The tensors that require a gradient and reach `root` (root included), in
// topological order: each after every input it needs, so `root` is last.
// Built with an explicit stack: no recursion that grows with the graph.
std::vector<std::shared_ptr<TensorImpl>> tape_of(const Tensor& root);
// Drops the nodes of `tape` (the graph, and the activations it holds).
void release_tape(std::vector<std::shared_ptr<TensorImpl>>& tape);
}  // namespace detail

}  // namespace amlp
