// tape.h — what ops record for reverse mode (internal to the framework).
//
// An op whose input requires a gradient attaches a Node to its output: the
// inputs its backward needs and the function that maps dL/d(output) to
// dL/d(input_i). backward() (autograd.h) orders the nodes into a tape.
#pragma once
#include <functional>
#include <initializer_list>
#include <memory>
#include <vector>

#include "framework/nn/autograd.h"

namespace amlp {

struct Node {
  const char* name;
  std::vector<Tensor> inputs;  // what the backward needs (and where grads go)
  // Given dL/d(output), returns dL/d(input_i) for each input (undefined where
  // an input needs none).
  std::function<std::vector<Tensor>(const Tensor& grad_out)> backward;
};

namespace detail {
// Called by ops: attaches a node to `out` if any input requires a gradient.
void record(Tensor& out, const char* name, std::vector<Tensor> inputs,
            std::function<std::vector<Tensor>(const Tensor&)> backward);
bool any_requires_grad(std::initializer_list<const Tensor*> ts);
}  // namespace detail

}  // namespace amlp
