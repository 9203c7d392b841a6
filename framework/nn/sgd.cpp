#include "framework/nn/sgd.h"

#include "framework/nn/autograd.h"
#include "framework/error.h"
#include "framework/ops.h"

namespace amlp {

std::string sgd_settings_problem(float lr, float momentum) {
  if (!(lr > 0.f)) return detail::concat("learning rate must be positive, got ", lr);
  if (!(momentum >= 0.f && momentum < 1.f)) return detail::concat("momentum must be in [0, 1), got ", momentum);
  return "";
}

SGD::SGD(std::vector<Parameter*> params, float lr, float momentum, float wd)
    : params_(std::move(params)), lr_(lr), momentum_coef_(momentum), wd_(wd) {
  if (params_.empty()) throw Error("SGD: no parameters (initialise the model with a forward pass first)");
  if (const std::string why = sgd_settings_problem(lr, momentum); !why.empty()) throw Error("SGD: " + why);
  NoGradGuard ng;
  for (Parameter* p : params_)
    momentum_.push_back(momentum != 0.f ? zeros(p->value.shape(), p->value.device()) : Tensor());
}

void SGD::step(int64_t batch_size) {
  if (batch_size <= 0) throw Error(detail::concat("SGD::step: batch size must be positive, got ", batch_size));
  NoGradGuard ng;
  const float rescale = 1.f / static_cast<float>(batch_size);
  // One op for every parameter on a device (one launch on a GPU), in the
  // parameters' order; the update of each is sgd_update_'s.
  std::vector<Tensor> grads(params_.size());
  for (size_t i = 0; i < params_.size(); ++i) {
    grads[i] = params_[i]->value.grad();
    if (!grads[i].defined())
      throw Error("SGD::step: parameter '" + params_[i]->name + "' has no gradient (call backward() first)");
  }
  for (size_t first = 0; first < params_.size();) {
    size_t end = first + 1;
    while (end < params_.size() && params_[end]->value.device() == params_[first]->value.device()) ++end;
    std::vector<Tensor*> ws, moms;
    std::vector<const Tensor*> gs;
    for (size_t i = first; i < end; ++i) {
      ws.push_back(&params_[i]->value);
      gs.push_back(&grads[i]);
      if (momentum_coef_ != 0.f) moms.push_back(&momentum_[i]);
    }
    sgd_update_multi_(ws, gs, moms, lr_, momentum_coef_, wd_, rescale);
    first = end;
  }
}

void SGD::zero_grad() {
  for (Parameter* p : params_) p->value.reset_grad();
}

}  // namespace amlp
