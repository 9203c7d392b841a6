// autograd.cpp — the backward pass over the tape (autograd.h).
#include "framework/nn/autograd.h"

#include <unordered_map>

#include "framework/core/tensor/tape.h"
#include "framework/core/tensor/tensor_impl.h"
#include "framework/error.h"
#include "framework/ops.h"

namespace amlp {

struct BackwardPass::State {
  // Nodes in topological order (a node after every input it needs), walked
  // from the end; `next` is the position of the next one to visit.
  std::vector<std::shared_ptr<TensorImpl>> tape;
  size_t next = 0;
  std::unordered_map<TensorImpl*, Tensor> grads;  // dL/d(t) of the nodes not yet visited
  TensorImpl* unit_root = nullptr;  // the root, when its head is ones not yet made (grads holds an undefined tensor)

  // Adds each input's part of the gradient to what it has.
  void add_input_grads(const Node& n, const std::vector<Tensor>& in_grads) {
    for (size_t i = 0; i < n.inputs.size() && i < in_grads.size(); ++i) {
      const Tensor& in = n.inputs[i];
      if (!in_grads[i].defined() || !in.defined() || !in.requires_grad()) continue;
      auto [slot, fresh] = grads.try_emplace(in.impl(), in_grads[i]);
      if (!fresh) slot->second = add(slot->second, in_grads[i]);
    }
  }

  void release() {
    detail::release_tape(tape);
    grads.clear();
    next = 0;
  }
};

namespace {
void need_grad_root(const Tensor& root) {
  if (!root.defined() || !root.requires_grad())
    throw Error("backward(): the tensor does not require a gradient (no parameter fed it, or it was made under NoGradGuard)");
}
}  // namespace

BackwardPass::BackwardPass(const Tensor& root) : s_(std::make_unique<State>()) {
  need_grad_root(root);
  s_->tape = detail::tape_of(root);
  s_->next = s_->tape.size();
  s_->grads[root.impl()] = Tensor();
  s_->unit_root = root.impl();
}

BackwardPass::BackwardPass(const Tensor& root, const Tensor& head) : s_(std::make_unique<State>()) {
  need_grad_root(root);
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
    if (t == st.unit_root) {  // the head is ones: the root's own unit gradients, or the ones made now
      st.unit_root = nullptr;
      if (t->grad_fn && t->grad_fn->unit_backward) {
        Node& n = *t->grad_fn;
        std::vector<Tensor> in_grads = n.unit_backward();
        st.grads.erase(g);
        st.add_input_grads(n, in_grads);
        continue;
      }
      g->second = ones(t->shape, Tensor(tp).device());
    }
    if (!t->grad_fn) {  // a leaf: its gradient is complete (every consumer came before it)
      t->grad = g->second.impl_ptr();
      st.grads.erase(g);
      return Tensor(tp);
    }
    Node& n = *t->grad_fn;
    std::vector<Tensor> in_grads = n.backward(g->second);
    st.grads.erase(g);  // free dL/d(t) as soon as it is used
    st.add_input_grads(n, in_grads);
  }
  st.release();
  return Tensor();
}

void backward(const Tensor& root, const Tensor& head) {
  BackwardPass pass(root, head);
  while (pass.next_leaf().defined()) {
  }
}

// Tensor::backward (tensor.h) lives here, not in core/tensor/tensor.cpp: it queues
// ops (ones, and add where gradients meet), which sit above core/.
void Tensor::backward() const {
  BackwardPass pass(*this);
  while (pass.next_leaf().defined()) {
  }
}

}  // namespace amlp
