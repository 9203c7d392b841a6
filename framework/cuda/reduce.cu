// reduce.cu — sum (and mean) of a whole tensor and column sums (bias
// gradients, alone or with the ReLU's backward). All accumulate in double
// like the CPU backend and are deterministic: no atomics on values, a fixed
// tree per launch configuration.
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "framework/cuda/cuda_backend.h"
#include "framework/cuda/cuda_check.h"
#include "framework/cuda/kernels.h"
#include "framework/cuda/launch.cuh"
#include "framework/runtime.h"

namespace amlp::cuda {

// The ReLU backward and bias gradient's launcher (below), with external
// linkage: bench_cuda_gemm.cu times it beside a device copy.
void launch_relu_backward_sum_rows(const float* y, const float* dy, float* dz, float* db, int rows, int cols,
                                   int sms, double* partials, cudaStream_t s);

namespace {

constexpr int kSumThreads = 256;
constexpr int kSumFinishThreads = 1024;
constexpr size_t kSumPerThread = 8;  // elements per thread before another block is worth it

// partials[block] = sum of this block's grid-stride share of x
__global__ void __launch_bounds__(kSumThreads) sum_partials_kernel(const float* x, size_t n, double* partials) {
  double acc = 0.0;
  for (size_t i = global_thread(); i < n; i += grid_threads()) acc += x[i];
  acc = block_sum<kSumThreads>(acc);
  if (threadIdx.x == 0) partials[blockIdx.x] = acc;
}

// y[0] = float(scale * sum(partials))   — as the CPU: static_cast<float>(s * scale)
// (__launch_bounds__: nvcc keeps the registers within what 1024 threads may use.)
__global__ void __launch_bounds__(kSumFinishThreads) sum_finish_kernel(const double* partials, int count, float scale, float* y) {
  double acc = 0.0;
  for (int i = threadIdx.x; i < count; i += kSumFinishThreads) acc += partials[i];
  acc = block_sum<kSumFinishThreads>(acc);
  if (threadIdx.x == 0) y[0] = static_cast<float>(acc * static_cast<double>(scale));
}

// A 32x32 block per 32 columns: thread (tx, ty) sums rows ty, ty+32, ... of
// column blockIdx.x*32 + tx (reads coalesced across tx); then row ty == 0
// adds the 32 partial sums of its column in a fixed order.
__global__ void __launch_bounds__(32 * 32) sum_rows_kernel(const float* x, float* y, int rows, int cols) {
  __shared__ double part[32][33];
  const int c = blockIdx.x * 32 + threadIdx.x;
  double acc = 0.0;
  if (c < cols)
    for (int r = threadIdx.y; r < rows; r += 32) acc += x[static_cast<size_t>(r) * cols + c];
  part[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && c < cols) {
    double s = 0.0;
    for (int k = 0; k < 32; ++k) s += part[k][threadIdx.x];
    y[c] = static_cast<float>(s);
  }
}

// relu_backward_sum_rows in one launch: dz = dy * (y > 0) and db(c) = sum_r dz(r,c).
// A block of 32 x kRows threads per 32*V columns and a chunk of rows
// (chunks = gridDim.y): thread (tx, ty) masks and sums rows ty, ty+kRows, ...
// of its chunk in columns c..c+V-1, c = (blockIdx.x*32 + tx)*V (V = 4: one
// float4 per access, where cols % 4 == 0); row ty == 0 adds the kRows sums in
// order. With one chunk that is the column's sum; with several, each block
// writes its chunk's sums to partials[chunk][c] and takes a ticket for its
// column group: the block that takes the last one adds the chunks' sums in
// chunk order and resets the ticket for the next launch. A fixed order of
// additions per launch configuration: deterministic, no atomics on values.
//
// kOuter (relu_backward_outer_sum_rows): dy(r,c) is the product g(r)·w(c),
// formed here (one rounding, as the GEMM of K = 1 forms it; under TF32 of
// inputs rounded as the CPU rounds them), so dy is never written or read.
__device__ __forceinline__ float tf32_rounded(float v) {  // cpu/linalg.cpp's round_to_tf32
  unsigned bits = __float_as_uint(v);
  if ((bits & 0x7f800000u) == 0x7f800000u) return v;
  bits += 0xfffu + ((bits >> 13) & 1u);
  return __uint_as_float(bits & ~0x1fffu);
}

template <int V, int kRows, bool kOuter>
__global__ void __launch_bounds__(32 * kRows)
    relu_backward_sum_rows_kernel(const float* y, const float* dy, float* dz, float* db, int rows, int cols,
                                  int rows_per_chunk, double* partials, unsigned* tickets, const float* w, bool tf32) {
  using Vec = typename std::conditional<V == 4, float4, float>::type;
  __shared__ double part[kRows][32 * V + 1];
  __shared__ bool last;
  const int c = (static_cast<int>(blockIdx.x) * 32 + static_cast<int>(threadIdx.x)) * V;
  const int chunks = static_cast<int>(gridDim.y);
  const int r0 = static_cast<int>(blockIdx.y) * rows_per_chunk;
  const int r1 = min(rows, r0 + rows_per_chunk);
  double acc[V] = {};
  float wc[V] = {};  // kOuter: this thread's columns of w
  if (kOuter && c < cols)
    for (int j = 0; j < V; ++j) wc[j] = tf32 ? tf32_rounded(w[c + j]) : w[c + j];
  if (c < cols)
    for (int r = r0 + static_cast<int>(threadIdx.y); r < r1; r += kRows) {
      const size_t i = static_cast<size_t>(r) * cols + c;
      const Vec yv = *reinterpret_cast<const Vec*>(y + i);
      Vec g;
      if (kOuter) {  // dy here is g, one value per row
        const float gr = tf32 ? tf32_rounded(dy[r]) : dy[r];
        for (int j = 0; j < V; ++j) reinterpret_cast<float*>(&g)[j] = __fmul_rn(gr, wc[j]);
      } else {
        g = *reinterpret_cast<const Vec*>(dy + i);
      }
      const float* yf = reinterpret_cast<const float*>(&yv);
      float* gf = reinterpret_cast<float*>(&g);
      for (int j = 0; j < V; ++j) {
        gf[j] = yf[j] > 0.f ? gf[j] : 0.f;
        acc[j] += gf[j];
      }
      *reinterpret_cast<Vec*>(dz + i) = g;
    }
  if (!db) return;  // the whole block
  for (int j = 0; j < V; ++j) part[threadIdx.y][threadIdx.x * V + j] = acc[j];
  __syncthreads();
  double sum[V] = {};
  if (threadIdx.y == 0)
    for (int k = 0; k < kRows; ++k)
      for (int j = 0; j < V; ++j) sum[j] += part[k][threadIdx.x * V + j];
  if (chunks == 1) {
    if (threadIdx.y == 0 && c < cols)
      for (int j = 0; j < V; ++j) db[c + j] = static_cast<float>(sum[j]);
    return;
  }
  if (threadIdx.y == 0 && c < cols)
    for (int j = 0; j < V; ++j) partials[static_cast<size_t>(blockIdx.y) * cols + c + j] = sum[j];
  __threadfence();  // the sums are visible to every block before the ticket is taken
  __syncthreads();
  if (threadIdx.x == 0 && threadIdx.y == 0)
    last = atomicAdd(&tickets[blockIdx.x], 1u) == static_cast<unsigned>(chunks - 1);
  __syncthreads();
  if (!last) return;
  if (threadIdx.y == 0 && c < cols)
    for (int j = 0; j < V; ++j) {
      double total = 0.0;
      for (int k = 0; k < chunks; ++k) total += __ldcg(&partials[static_cast<size_t>(k) * cols + c + j]);
      db[c + j] = static_cast<float>(total);
    }
  if (threadIdx.x == 0 && threadIdx.y == 0) tickets[blockIdx.x] = 0;
}

// y[0] = scale * sum(x): per-block double partials (in the backend's scratch), then one
// block sums those; deterministic (no atomics), double accumulation as on the CPU.
void sum_scaled(Backend& dev, const float* x, float* y, size_t n, float scale) {
  auto& be = static_cast<CudaBackend&>(dev);
  cudaStream_t s = be.stream();
  auto* partials = static_cast<double*>(be.scratch());
  int blocks = 0;
  if (n > 0) {
    blocks = static_cast<int>(std::min<size_t>((n + kSumThreads * kSumPerThread - 1) / (kSumThreads * kSumPerThread),
                                               CudaBackend::kMaxSumBlocks));
    sum_partials_kernel<<<blocks, kSumThreads, 0, s>>>(x, n, partials);
    AMLP_CUDA_CHECK_LAUNCH();
  }
  sum_finish_kernel<<<1, kSumFinishThreads, 0, s>>>(partials, blocks, scale, y);  // n == 0: y = 0
  AMLP_CUDA_CHECK_LAUNCH();
}

void column_sums(Backend& dev, const float* x, float* y, int rows, int cols) {
  cudaStream_t s = static_cast<CudaBackend&>(dev).stream();
  if (cols <= 0) return;
  const dim3 block(32, 32);
  const dim3 grid(static_cast<unsigned>((cols + 31) / 32));
  sum_rows_kernel<<<grid, block, 0, s>>>(x, y, rows < 0 ? 0 : rows, cols);  // rows == 0: y = 0
  AMLP_CUDA_CHECK_LAUNCH();
}

void relu_backward_sum_rows(Backend& dev, const float* y, const float* dy, float* dz, float* db, int rows, int cols) {
  auto& be = static_cast<CudaBackend&>(dev);
  launch_relu_backward_sum_rows(y, dy, dz, db, rows, cols, be.sms(), static_cast<double*>(be.colsum()), be.stream());
}

template <int V, int kRows, bool kOuter>
void launch_chunked(const float* y, const float* dy, float* dz, float* db, int rows, int cols, int sms,
                    double* partials, cudaStream_t s, const float* w) {
  constexpr int kBlocksPerSm = 2048 / (32 * kRows);  // as many threads as a multiprocessor holds
  const int groups = (cols + 32 * V - 1) / (32 * V);
  int chunks = 1;
  if (db && groups <= CudaBackend::kColsumTickets) {
    const int want = std::max(1, (kBlocksPerSm * std::max(sms, 1) + groups - 1) / groups);
    const int most = static_cast<int>(std::min<size_t>(CudaBackend::kColsumPartials / static_cast<size_t>(cols), size_t(1) << 16));
    chunks = std::max(1, std::min({want, (rows + 63) / 64, most}));
  }
  int per_chunk = (rows + chunks - 1) / chunks;
  per_chunk = std::max(32, (per_chunk + 31) / 32 * 32);
  chunks = std::max(1, (rows + per_chunk - 1) / per_chunk);
  if (!db) chunks = std::max(1, std::min((rows + kRows - 1) / kRows, kBlocksPerSm * std::max(sms, 1) / groups));
  if (!db) per_chunk = (rows + chunks - 1) / chunks;
  auto* tickets = reinterpret_cast<unsigned*>(partials + CudaBackend::kColsumPartials);
  const dim3 block(32, kRows), grid(static_cast<unsigned>(groups), static_cast<unsigned>(chunks));
  relu_backward_sum_rows_kernel<V, kRows, kOuter>
      <<<grid, block, 0, s>>>(y, dy, dz, db, rows, cols, per_chunk, partials, tickets, w, kOuter && tf32());
  AMLP_CUDA_CHECK_LAUNCH();
}

// One kernel. Its row chunks give the GPU about a multiprocessor's worth of
// threads per multiprocessor (a d2l layer has only 4-64 column groups),
// within the partial sums' room. float4 accesses where every row starts on
// 16 bytes. kOuter: dy holds one value per row (g), w one per column.
template <bool kOuter>
void launch_masked_sums(const float* y, const float* dy, float* dz, float* db, int rows, int cols, int sms,
                        double* partials, cudaStream_t s, const float* w) {
  rows = rows < 0 ? 0 : rows;
  if (cols <= 0) return;
  const uintptr_t rows_read =
      reinterpret_cast<uintptr_t>(y) | reinterpret_cast<uintptr_t>(dz) | (kOuter ? 0 : reinterpret_cast<uintptr_t>(dy));
  if (cols % 4 == 0 && rows_read % 16 == 0)
    launch_chunked<4, 8, kOuter>(y, dy, dz, db, rows, cols, sms, partials, s, w);
  else
    launch_chunked<1, 32, kOuter>(y, dy, dz, db, rows, cols, sms, partials, s, w);
}

}  // namespace

void launch_relu_backward_sum_rows(const float* y, const float* dy, float* dz, float* db, int rows, int cols, int sms,
                                   double* partials, cudaStream_t s) {
  launch_masked_sums<false>(y, dy, dz, db, rows, cols, sms, partials, s, nullptr);
}

// ASYNCMLP_CANDIDATES=out_grad: the outer product formed in the masking pass
// (g: rows values, w: cols values), one launch instead of a GEMM and a pass.
void relu_backward_outer_sum_rows(Backend& dev, const float* y, const float* g, const float* w, float* dz, float* db,
                                  int rows, int cols) {
  auto& be = static_cast<CudaBackend&>(dev);
  launch_masked_sums<true>(y, g, dz, db, rows, cols, be.sms(), static_cast<double*>(be.colsum()), be.stream(), w);
}

namespace {
__global__ void __launch_bounds__(256)
    gemv_rows_kernel(const float* x, const float* w, const float* b, float* y, int rows, int cols) {
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int r = static_cast<int>(blockIdx.x) * 8 + static_cast<int>(threadIdx.x) / 32;
  if (r >= rows) return;
  const float* xr = x + static_cast<size_t>(r) * cols;
  float acc = 0.f;
  if (cols % 4 == 0 && (reinterpret_cast<uintptr_t>(xr) | reinterpret_cast<uintptr_t>(w)) % 16 == 0) {
    const float4* x4 = reinterpret_cast<const float4*>(xr);
    const float4* w4 = reinterpret_cast<const float4*>(w);
    for (int c = lane; c < cols / 4; c += 32) {
      const float4 a = x4[c], v = __ldg(&w4[c]);
      acc = fmaf(a.x, v.x, fmaf(a.y, v.y, fmaf(a.z, v.z, fmaf(a.w, v.w, acc))));
    }
  } else {
    for (int c = lane; c < cols; c += 32) acc = fmaf(xr[c], __ldg(&w[c]), acc);
  }
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
  if (lane == 0) y[r] = b ? acc + b[0] : acc;
}
}  // namespace

void launch_gemv_rows(const float* x, const float* w, const float* b, float* y, int rows, int cols, cudaStream_t s) {
  if (rows <= 0) return;
  gemv_rows_kernel<<<(rows + 7) / 8, 256, 0, s>>>(x, w, b, y, rows, cols);
  AMLP_CUDA_CHECK_LAUNCH();
}

void add_reduce_kernels(KernelTable& t) {
  t.relu_backward_outer_sum_rows = relu_backward_outer_sum_rows;
  t.sum_scaled = sum_scaled;
  t.column_sums = column_sums;
  t.relu_backward_sum_rows = relu_backward_sum_rows;
}

}  // namespace amlp::cuda
