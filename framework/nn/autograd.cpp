// autograd.cpp — the backward pass over the tape (autograd.h).
#include "framework/nn/autograd.h"

#include <unordered_map>

#include "framework/core/tensor_impl.h"
#include "framework/error.h"
#include "framework/ops.h"

namespace amlp {

struct BackwardPass::State {
  // Nodes in topological order (a node after every input it needs), walked
  // from the end; `next` is the position of the next one to visit.
  std::vector<std::shared_ptr<TensorImpl>> tape;
  size_t next = 0;
  std::unordered_map<TensorImpl*, Tensor> grads;  // dL/d(t) of the nodes not yet visited

  void release() {
    detail::release_tape(tape);
    grads.clear();
    next = 0;
  }
};

BackwardPass::BackwardPass(const Tensor& root, const Tensor& head) : s_(std::make_unique<State>()) {
  if (!root.defined() || !root.requires_grad())
    throw Error("backward(): the tensor does not require a gradient (no parameter fed it, or it was made under NoGradGuard)");
  if (!head.defined()) throw Error("backward(): undefined head gradient");
  if (head.device() != root.device())
    throw DeviceError("backward(): head gradient on " + head.device().str() + ", output on " + root.device().str());
  if (head.shape() != root.shape())
    throw ShapeError("backward(): head gradient " + shape_str(head.shape()) + " does not match output " +
                     shape_str(root.shape()));

  s_->tape = detail::tape_of(root);
  s_->next = s_->tape.size();
  s_->grads[root.impl()] = head;
}

BackwardPass::~BackwardPass() { s_->release(); }

Tensor BackwardPass::next_leaf() {
  NoGradGuard ng;
  State& st = *s_;
  while (st.next > 0) {
    const std::shared_ptr<TensorImpl>& tp = st.tape[--st.next];
    TensorImpl* t = tp.get();
    auto g = st.grads.find(t);
    if (g == st.grads.end()) continue;
    if (!t->grad_fn) {  // a leaf: its gradient is complete (every consumer came before it)
      t->grad = g->second.impl_ptr();
      st.grads.erase(g);
      return Tensor(tp);
    }
    Node& n = *t->grad_fn;
    std::vector<Tensor> in_grads = n.backward(g->second);
    st.grads.erase(g);  // free dL/d(t) as soon as it is used
    for (size_t i = 0; i < n.inputs.size() && i < in_grads.size(); ++i) {
      const Tensor& in = n.inputs[i];
      if (!in_grads[i].defined() || !in.defined() || !in.requires_grad()) continue;
      auto [slot, fresh] = st.grads.try_emplace(in.impl(), in_grads[i]);
      if (!fresh) slot->second = add(slot->second, in_grads[i]);
    }
  }
  st.release();
  return Tensor();
}

void backward(const Tensor& root, const Tensor& head) {
  BackwardPass pass(root, head);
  while (pass.next_leaf().defined()) {
  }
}

// Tensor::backward (tensor.h) lives here, not in core/tensor.cpp: it queues
// ops (ones, and add where gradients meet), which sit above core/.
void Tensor::backward() const {
  amlp::backward(*this, ones(shape(), device()));
}

}  // namespace amlp
