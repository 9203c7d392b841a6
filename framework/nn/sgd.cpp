#include "framework/nn/sgd.h"

#include "framework/nn/autograd.h"
#include "framework/error.h"
#include "framework/ops.h"

namespace amlp {

SGD::SGD(std::vector<Parameter*> params, float lr, float momentum, float wd)
    : params_(std::move(params)), lr_(lr), momentum_coef_(momentum), wd_(wd) {
  if (params_.empty()) throw Error("SGD: no parameters (initialise the model with a forward pass first)");
  if (!(lr > 0.f)) throw Error(detail::concat("SGD: learning rate must be positive, got ", lr));
  if (momentum < 0.f || momentum >= 1.f) throw Error(detail::concat("SGD: momentum must be in [0, 1), got ", momentum));
  NoGradGuard ng;
  for (Parameter* p : params_)
    momentum_.push_back(momentum != 0.f ? zeros(p->value.shape(), p->value.device()) : Tensor());
}

void SGD::step(int64_t batch_size) {
  if (batch_size <= 0) throw Error(detail::concat("SGD::step: batch size must be positive, got ", batch_size));
  NoGradGuard ng;
  const float rescale = 1.f / static_cast<float>(batch_size);
  for (size_t i = 0; i < params_.size(); ++i) {
    Parameter& p = *params_[i];
    Tensor g = p.value.grad();
    if (!g.defined()) throw Error("SGD::step: parameter '" + p.name + "' has no gradient (call backward() first)");
    sgd_update_(p.value, g, momentum_[i], lr_, momentum_coef_, wd_, rescale);
  }
}

void SGD::zero_grad() {
  for (Parameter* p : params_) p->value.reset_grad();
}

}  // namespace amlp
