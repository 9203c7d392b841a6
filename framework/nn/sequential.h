// sequential.h — blocks applied in order.
#pragma once
#include <memory>
#include <vector>

#include "framework/nn/block.h"

namespace amlp {

class Sequential : public Block {
 public:
  Sequential& add(std::unique_ptr<Block> b) {
    blocks_.push_back(std::move(b));
    return *this;
  }
  Tensor forward(const Tensor& x) override {
    Tensor h = x;
    for (auto& b : blocks_) h = b->forward(h);
    return h;
  }
  std::vector<Parameter*> parameters() override {
    std::vector<Parameter*> ps;
    for (auto& b : blocks_)
      for (Parameter* p : b->parameters()) ps.push_back(p);
    return ps;
  }
  std::string describe() const override {
    std::string s;
    for (auto& b : blocks_) s += (s.empty() ? "" : " -> ") + b->describe();
    return s;
  }
  size_t size() const { return blocks_.size(); }
  Block& operator[](size_t i) { return *blocks_[i]; }

 private:
  std::vector<std::unique_ptr<Block>> blocks_;
};

}  // namespace amlp
