// test_tape.cpp — the tape (framework/core/tensor/tape.cpp): a graph that is
// dropped without a backward pass is freed node after node, not by
// recursion, however deep.
#include <pthread.h>

#include "framework/core/tensor/tape.h"
#include "framework/core/tensor/tensor_impl.h"
#include "test_util.h"

namespace amlp::testing {
namespace {

// Each node held its inputs, each input its node: a chain of 100,000 Dense
// layers dropped without a backward pass was freed by recursion as deep as the
// chain and overflowed the stack (a segfault, under any build). The chain is
// dropped here on a thread of a 256 KiB stack: recursion through 20,000 nodes
// (several frames of tens of bytes or more each, per node) would need
// megabytes of it.
void on_a_small_stack(void (*f)(void*), void* arg) {
  struct Call {
    void (*f)(void*);
    void* arg;
  } call{f, arg};
  pthread_attr_t attr;
  ASSERT_EQ(pthread_attr_init(&attr), 0);
  ASSERT_EQ(pthread_attr_setstacksize(&attr, size_t{256} << 10), 0);
  pthread_t t;
  ASSERT_EQ(pthread_create(
                &t, &attr,
                [](void* c) -> void* {
                  static_cast<Call*>(c)->f(static_cast<Call*>(c)->arg);
                  return nullptr;
                },
                &call),
            0);
  pthread_attr_destroy(&attr);
  ASSERT_EQ(pthread_join(t, nullptr), 0);
}

TEST(Tape, AChainDroppedWithoutABackwardPassIsFreedWithoutRecursion) {
  constexpr int kChain = 20000;
  const Device d = Device::cpu(0);
  Tensor x = ones({1}, d);
  x.requires_grad_();
  Tensor y = x;
  for (int i = 0; i < kChain; ++i) y = add_scalar(y, 1.f);
  EXPECT_EQ(y.item(), float(kChain + 1));
  ASSERT_NE(y.impl()->grad_fn, nullptr);
  std::weak_ptr<Node> first;
  {
    Tensor z = y;  // the first op's node: reached through every input back to x
    while (z.impl()->grad_fn && z.impl()->grad_fn->inputs[0].impl() != x.impl()) z = z.impl()->grad_fn->inputs[0];
    first = z.impl()->grad_fn;
  }
  ASSERT_FALSE(first.expired());
  // The chain's last handle, dropped on the small stack: all 20,000 nodes go there.
  on_a_small_stack([](void* t) { *static_cast<Tensor*>(t) = Tensor(); }, &y);
  EXPECT_TRUE(first.expired());
  EXPECT_TRUE(x.requires_grad());  // the leaf keeps what it was
}

// A node some other handle still holds is not taken apart: dropping the end of
// a chain leaves an intermediate tensor's graph whole, and it still trains.
TEST(Tape, ANodeStillHeldKeepsItsInputs) {
  const Device d = Device::cpu(0);
  Tensor x = ones({1}, d);
  x.requires_grad_();
  Tensor mid = add_scalar(add_scalar(x, 1.f), 1.f);
  Tensor end = add_scalar(mid, 1.f);
  end = Tensor();
  ASSERT_NE(mid.impl()->grad_fn, nullptr);
  ASSERT_EQ(mid.impl()->grad_fn->inputs.size(), 1u);
  ASSERT_NE(mid.impl()->grad_fn->inputs[0].impl()->grad_fn, nullptr);
  mid.backward();
  EXPECT_EQ(x.grad().item(), 1.f);
}

}  // namespace
}  // namespace amlp::testing
