#include "framework/nn/dense.h"

#include "framework/nn/autograd.h"
#include "framework/error.h"
#include "framework/ops.h"

namespace amlp {

Dense::Dense(int64_t units, Activation act, int64_t in_units) : units_(units), in_units_(in_units), act_(act) {
  if (units <= 0) throw ShapeError(detail::concat("Dense: units must be positive, got ", units));
}

void Dense::initialize(int64_t in_units, Device d) {
  NoGradGuard ng;
  in_units_ = in_units;
  weight_.value = rand_uniform({units_, in_units}, d, -kInitScale, kInitScale).requires_grad_();
  bias_.value = zeros({units_}, d).requires_grad_();
}

Tensor Dense::forward(const Tensor& x) {
  if (x.ndim() != 2)
    throw ShapeError("Dense(" + std::to_string(units_) + "): input must be 2-D (batch, features), got " +
                     shape_str(x.shape()));
  if (!initialized()) initialize(in_units_ ? in_units_ : x.dim(1), x.device());  // deferred init
  if (x.dim(1) != in_units_)
    throw ShapeError(detail::concat("Dense(", units_, "): input ", shape_str(x.shape()), " does not fit weight ",
                                    shape_str(weight_.value.shape()), " (expects ", in_units_, " features)"));
  if (act_ == Activation::ReLU) return linear_relu(x, weight_.value, bias_.value);  // bias + ReLU in one pass
  return linear(x, weight_.value, bias_.value);
}

std::vector<Parameter*> Dense::parameters() {
  if (!initialized()) return {};
  return {&weight_, &bias_};
}

std::string Dense::describe() const {
  return "Dense(" + std::to_string(units_) + (act_ == Activation::ReLU ? ", relu" : "") + ")";
}

}  // namespace amlp
