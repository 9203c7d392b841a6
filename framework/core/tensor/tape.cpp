// tape.cpp — recording and ordering the tape (tape.h).
#include "framework/core/tensor/tape.h"

#include <unordered_set>
#include <utility>

#include "framework/core/tensor/tensor_impl.h"

namespace amlp {

namespace {
thread_local bool t_grad_enabled = true;
}

bool grad_enabled() { return t_grad_enabled; }
void set_grad_enabled(bool on) { t_grad_enabled = on; }
NoGradGuard::NoGradGuard() : prev_(t_grad_enabled) { t_grad_enabled = false; }
NoGradGuard::~NoGradGuard() { t_grad_enabled = prev_; }

namespace {
// Empties n: its closures first (what they keep of its inputs is also in
// `inputs`), then its inputs, each input's node that nothing else holds moved
// into `orphans` before the input goes.
void take_apart(Node& n, std::vector<std::shared_ptr<Node>>& orphans) {
  n.backward = nullptr;
  n.unit_backward = nullptr;
  n.relu.reset();
  for (Tensor& t : n.inputs) {
    const std::shared_ptr<TensorImpl>& impl = t.impl_ptr();
    if (impl && impl.use_count() == 1 && impl->grad_fn && impl->grad_fn.use_count() == 1)
      orphans.push_back(std::move(impl->grad_fn));
  }
  n.inputs.clear();
}
}  // namespace

Node::~Node() {
  std::vector<std::shared_ptr<Node>> orphans;
  take_apart(*this, orphans);
  while (!orphans.empty()) {
    std::shared_ptr<Node> n = std::move(orphans.back());
    orphans.pop_back();
    take_apart(*n, orphans);
  }  // n goes here, empty: its own ~Node has nothing to free
}

namespace detail {

bool any_requires_grad(std::initializer_list<const Tensor*> ts) {
  if (!t_grad_enabled) return false;
  for (const Tensor* t : ts)
    if (t->defined() && t->requires_grad()) return true;
  return false;
}

void record(Tensor& out, const char* name, std::vector<Tensor> inputs,
            std::function<std::vector<Tensor>(const Tensor&)> bw, std::function<std::vector<Tensor>()> unit_bw) {
  TensorImpl* o = out.impl();
  o->requires_grad = true;
  auto n = std::make_shared<Node>();
  n->name = name;
  n->inputs = std::move(inputs);
  n->backward = std::move(bw);
  n->unit_backward = std::move(unit_bw);
  o->grad_fn = std::move(n);
}

std::vector<std::shared_ptr<TensorImpl>> tape_of(const Tensor& root) {
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
  return tape;
}

void release_tape(std::vector<std::shared_ptr<TensorImpl>>& tape) {
  for (auto& t : tape) t->grad_fn.reset();
  tape.clear();
}

}  // namespace detail

}  // namespace amlp
