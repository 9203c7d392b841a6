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
  o->grad_fn = std::make_shared<Node>(Node{name, std::move(inputs), std::move(bw), std::move(unit_bw), nullptr});
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
