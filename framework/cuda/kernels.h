// kernels.h — the few launchers one .cu file shares with another. The
// table's kernels (core/kernels.h) are defined in the .cu file of their
// concept (elementwise.cu, loss.cu, optimizer.cu, reduce.cu, random.cu,
// check_finite.cu; the GEMMs in linalg.cpp), as the CPU side's are in cpu/.
// Each launcher only launches onto `s`, checks the launch, and returns at once
// for n == 0.
//
// Where the CPU backend's loop has a fixed order of float operations, the
// kernel repeats it with round-to-nearest intrinsics (no FMA contraction), so
// the results are bitwise equal to the cpu/ kernels of the same name.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace amlp::cuda {

// elementwise.cu: y = lo + width * y   (cuRAND's (0,1] uniforms to [lo, hi), random.cu)
void launch_affine(float* y, size_t n, float lo, float width, cudaStream_t s);
// random.cu: y[i] = mean + stddev * normal number offset + i of cuRAND's
// Philox stream, bitwise the CPU generator's (box_muller.h); also timed
// beside curandGenerateNormal by bench/bench_cuda_random.cu.
void launch_normal(float* y, size_t n, uint64_t seed, uint64_t offset, float mean, float stddev, cudaStream_t s);

// Inputs per launch of the sum of k tensors (elementwise.cu).
constexpr int kSumNBatch = 8;
// Up to this many columns, l2_loss runs one thread per row in the CPU's order
// (bitwise); above it, one warp per row (a tree sum). loss.cu.
constexpr int kL2RowThreadMaxCols = 32;

}  // namespace amlp::cuda
