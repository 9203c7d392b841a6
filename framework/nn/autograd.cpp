#include "framework/nn/tape.h"

#include <unordered_map>
#include <unordered_set>

#include "framework/core/tensor_impl.h"
#include "framework/error.h"
#include "framework/ops.h"

namespace amlp {

namespace {
thread_local bool t_grad_enabled = true;
}

bool grad_enabled() { return t_grad_enabled; }
NoGradGuard::NoGradGuard() : prev_(t_grad_enabled) { t_grad_enabled = false; }
NoGradGuard::~NoGradGuard() { t_grad_enabled = prev_; }

namespace detail {

bool any_requires_grad(std::initializer_list<const Tensor*> ts) {
  if (!t_grad_enabled) return false;
  for (const Tensor* t : ts)
    if (t->defined() && t->requires_grad()) return true;
  return false;
}

void record(Tensor& out, const char* name, std::vector<Tensor> inputs,
            std::function<std::vector<Tensor>(const Tensor&)> bw) {
  TensorImpl* o = out.impl();
  o->requires_grad = true;
  o->grad_fn = std::make_shared<Node>(Node{name, std::move(inputs), std::move(bw)});
}

}  // namespace detail

void backward(const Tensor& root, const Tensor& head) {
  if (!root.defined() || !root.requires_grad())
    throw Error("backward(): the tensor does not require a gradient (no parameter fed it, or it was made under NoGradGuard)");
  if (!head.defined()) throw Error("backward(): undefined head gradient");
  if (head.device() != root.device())
    throw DeviceError("backward(): head gradient on " + head.device().str() + ", output on " + root.device().str());
  if (head.shape() != root.shape())
    throw ShapeError("backward(): head gradient " + shape_str(head.shape()) + " does not match output " +
                     shape_str(root.shape()));

  // The tape: nodes in topological order, built with an explicit stack.
  std::vector<std::shared_ptr<TensorImpl>> tape;
  std::unordered_set<TensorImpl*> seen;
  std::vector<std::pair<std::shared_ptr<TensorImpl>, size_t>> stack;  // (tensor, next input to visit)
  stack.push_back({root.impl_ptr(), 0});
  seen.insert(root.impl());
  while (!stack.empty()) {
    auto& [t, next] = stack.back();
    Node* n = t->grad_fn.get();
    if (n && next < n->inputs.size()) {
      const Tensor& in = n->inputs[next++];
      if (in.defined() && in.requires_grad() && seen.insert(in.impl()).second) stack.push_back({in.impl_ptr(), 0});
      continue;
    }
    tape.push_back(t);
    stack.pop_back();
  }

  NoGradGuard ng;
  std::unordered_map<TensorImpl*, Tensor> grads;
  grads[root.impl()] = head;
  for (auto it = tape.rbegin(); it != tape.rend(); ++it) {
    TensorImpl* t = it->get();
    auto g = grads.find(t);
    if (g == grads.end()) continue;
    if (!t->grad_fn) {  // a leaf: write its gradient
      t->grad = g->second.impl_ptr();
      continue;
    }
    Node& n = *t->grad_fn;
    std::vector<Tensor> in_grads = n.backward(g->second);
    grads.erase(g);  // free dL/d(t) as soon as it is used
    for (size_t i = 0; i < n.inputs.size() && i < in_grads.size(); ++i) {
      const Tensor& in = n.inputs[i];
      if (!in_grads[i].defined() || !in.defined() || !in.requires_grad()) continue;
      auto [slot, fresh] = grads.try_emplace(in.impl(), in_grads[i]);
      if (!fresh) slot->second = add(slot->second, in_grads[i]);
    }
  }
  // Release the graph (and the activations it holds).
  for (auto& t : tape) t->grad_fn.reset();
}

void Tensor::backward() const {
  amlp::backward(*this, ones(shape(), device()));
}

}  // namespace amlp
