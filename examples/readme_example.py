"""The README's C++ example (examples/readme_example.cpp), in Python: the book's
MLP trained for ten batches with no wait until the end."""
import asyncmlp as am

dev = am.cpu()
net = am.Sequential()  # Dense(2048, relu) -> Dense(512, relu) -> Dense(1): the book's MLP
net.add(am.Dense(2048, activation="relu"), am.Dense(512, activation="relu"), am.Dense(1))
loss, trainer = am.L2Loss(), am.SGD(net, lr=0.005)
losses = []
for i in range(10):
    X = am.randn((1024, 512), device=dev)            # queued: returns at once
    l = loss(net(X), am.ones((1024,), device=dev))   # shapes checked here, kernels queued
    l.backward()
    trainer.step(1024)                               # w -= lr * grad / 1024
    trainer.zero_grad()
    losses.append(am.mean(l))                        # queued behind the step; nothing waits
print(f"ops queued, not run: {am.queue_stats(dev)['unlaunched']}")
am.waitall()                                         # the only wait
print(f"loss {losses[-1].item():.6f}, peak {am.memory_stats(dev)['peak_bytes'] / 1e6:.1f} MB")
