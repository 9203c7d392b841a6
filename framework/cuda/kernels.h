// kernels.h — the few launchers one .cu file shares with another. The
// table's kernels (core/backend/kernels.h) are defined in the .cu file of their
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

#include "framework/core/backend/kernels.h"

namespace amlp::cuda {

// elementwise.cu: y = lo + width * y   (cuRAND's (0,1] uniforms to [lo, hi), random.cu)
void launch_affine(float* y, size_t n, float lo, float width, cudaStream_t s);
// random.cu: y[i] = mean + stddev * normal number offset + i of cuRAND's
// Philox stream, bitwise the CPU generator's (box_muller.h); also timed
// beside curandGenerateNormal by bench/bench_cuda_random.cu.
void launch_normal(float* y, size_t n, uint64_t seed, uint64_t offset, float mean, float stddev, cudaStream_t s);

// elementwise.cu: y(r,c) = max(y(r,c) + b(c), 0) in place (b may be null),
// bitwise cpu/elementwise.cpp's bias_relu; float4 accesses where cols % 4 == 0;
// `sms` sizes the grid. Also timed beside a device copy by bench_cuda_gemm.cu.
void launch_bias_relu(float* y, const float* b, int rows, int cols, int sms, cudaStream_t s);

// elementwise.cu: the ReLU mask of y (rows, cols) in cuBLASLt's RELU_AUX
// layout: bit c of row r is bit (r*ld + c) % 32 of word (r*ld + c) / 32,
// ld = cols rounded up to 128 (core/backend/kernels.h's relu_mask_words); set where
// y > 0. What dense_forward_relu_mask writes when cuBLASLt has no plan.
void launch_relu_mask(const float* y, uint32_t* mask, int rows, int cols, cudaStream_t s);
// y(r) = x(r,:)·w + b[0] (b may be null) for a layer of one output unit: a
// warp per row, float accumulation in each lane, then a shuffle reduction
// (ASYNCMLP_CANDIDATES=out_gemv; reduce.cu).
void launch_gemv_rows(const float* x, const float* w, const float* b, float* y, int rows, int cols, cudaStream_t s);

// optimizer.cu: the SGD step of k parameters (core/backend/kernels.h's
// sgd_update_multi) in as few launches as its table allows (one for up to
// 24); also timed beside a device copy by bench/bench_cuda_gemm.cu.
void launch_sgd_multi(const SgdParam* ps, int k, float lr, float momentum, float wd, float rescale, cudaStream_t s);

// Inputs per launch of the sum of k tensors (elementwise.cu).
constexpr int kSumNBatch = 8;
// Up to this many columns, l2_loss runs one thread per row in the CPU's order
// (bitwise); above it, one warp per row (a tree sum). loss.cu.
constexpr int kL2RowThreadMaxCols = 32;

}  // namespace amlp::cuda
