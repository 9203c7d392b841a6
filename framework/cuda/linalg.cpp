// linalg.cpp — the CUDA GEMMs: cuBLAS SGEMM, row-major (sgemm.h), and a Dense
// layer's fused GEMMs through cuBLASLt (lt_gemm.h). TF32 is a setting of
// these GEMMs: each reads tf32() (runtime.h) as it is launched. The CPU's
// are cpu/linalg.cpp and the compositions of core/backend/kernels.h.
#include "framework/cuda/cuda_backend.h"
#include "framework/util/env.h"
#include "framework/cuda/cuda_check.h"
#include "framework/cuda/kernels.h"
#include "framework/cuda/sgemm.h"
#include "framework/runtime.h"

namespace amlp::cuda {

namespace {

void gemm(Backend& dev, bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda, const float* B,
          int ldb, float beta, float* C, int ldc) {
  auto& be = static_cast<CudaBackend&>(dev);
  (void)be.stream();
  if (M <= 0 || N <= 0) return;
  AMLP_CUDA_CHECK(sgemm_row_major(be.blas(tf32()), ta, tb, M, N, K, &alpha, A, lda, B, ldb, &beta, C, ldc));
}

// One cuBLASLt matmul with the bias (and the ReLU) in its epilogue; composed
// (core/backend/kernels.h) where it has no plan.
void dense_forward(Backend& dev, const float* x, const float* w, const float* bias, float* y, int B, int in, int out,
                   bool relu) {
  auto& be = static_cast<CudaBackend&>(dev);
  if (out == 1 && !relu && candidate_on(kCandidateOutGemv)) {  // a layer of one unit: a GEMV of ours
    launch_gemv_rows(x, w, bias, y, B, in, be.stream());
    return;
  }
  if (be.lt().linear(x, w, bias, y, B, in, out, relu, tf32())) return;
  composed::dense_forward(dev, x, w, bias, y, B, in, out, relu);
}

// One cuBLASLt matmul whose epilogue reduces the bias gradient; composed where it has no plan.
void dense_grad_weight(Backend& dev, const float* dz, const float* x, float* dw, float* db, int B, int in, int out) {
  auto& be = static_cast<CudaBackend&>(dev);
  (void)be.stream();
  if (be.lt().grad_weight(dz, x, dw, db, B, in, out, tf32())) return;
  composed::dense_grad_weight(dev, dz, x, dw, db, B, in, out);
}

// One cuBLASLt matmul that also writes the ReLU's mask (RELU_AUX_BIAS);
// where it has no plan, the composition and a pass that writes the mask.
void dense_forward_relu_mask(Backend& dev, const float* x, const float* w, const float* bias, float* y,
                             uint32_t* mask, int B, int in, int out) {
  auto& be = static_cast<CudaBackend&>(dev);
  cudaStream_t s = be.stream();
  if (be.lt().linear_relu_mask(x, w, bias, y, mask, B, in, out, tf32())) return;
  composed::dense_forward(dev, x, w, bias, y, B, in, out, /*relu=*/true);
  launch_relu_mask(y, mask, B, out, s);
}

// One cuBLASLt matmul applying the mask and summing the bias gradient in its
// epilogue (DRELU_BGRAD); composed (the SGEMM, then the masking pass over y)
// without a mask or a plan.
void dense_grad_input_relu(Backend& dev, const float* g, const float* w, const float* y, const uint32_t* mask,
                           float* dz, float* db, int B, int in, int out) {
  auto& be = static_cast<CudaBackend&>(dev);
  (void)be.stream();
  if (mask && be.lt().grad_input_relu(g, w, mask, dz, db, B, in, out, tf32())) return;
  composed::dense_grad_input_relu(dev, g, w, y, mask, dz, db, B, in, out);
}

}  // namespace

void add_linalg_kernels(KernelTable& t) {
  t.gemm = gemm;
  t.dense_forward = dense_forward;
  t.dense_grad_weight = dense_grad_weight;
  t.dense_grad_input_relu = dense_grad_input_relu;
  // The mask only where cuBLASLt will use it (ASYNCMLP_LT=1); else the GEMM and a pass.
  if (env_settings().lt_epilogues) t.dense_forward_relu_mask = dense_forward_relu_mask;
}

}  // namespace amlp::cuda
