// lt_gemm.h — a Dense layer's GEMMs with their epilogues fused, through
// cuBLASLt: the forward with the bias (and the ReLU) applied as the GEMM
// writes its tile (CUBLASLT_EPILOGUE_BIAS / RELU_BIAS, or RELU_AUX_BIAS
// keeping the ReLU's mask as a bit per element), the weight gradient with the
// bias gradient reduced in the same kernel (BGRADB), and the input gradient
// of the layer above a ReLU with that ReLU's backward (the mask) and the
// bias gradient of the layer below (DRELU_BGRAD). One launch where the
// composition takes two: an op stays one kernel (docs/design.md §1).
//
// Row-major through column-major as in sgemm.h: y(B,out) = x·Wᵀ is, read
// column-major, yᵀ(out,B) = W(out,in)·xᵀ(in,B) with W stored as its
// transpose; the bias runs along D's rows (out), as the epilogue wants.
// dW(out,in) = dzᵀ·x is column-major dWᵀ(in,out) = xᵀ(in,B)·dz(B,out), and
// BGRADB sums op(B) = dz over the GEMM's k (the batch): db(o) = Σ_r dz(r,o).
//
// Plans (descriptors, layouts and the heuristic's algorithm) are made once
// per shape, math mode and pointer alignment, on the worker thread, and
// reused: a launch sets the pointers and calls cublasLtMatmul. A shape for
// which cuBLASLt offers no algorithm returns false and the caller composes
// (core/backend/kernels.h's compositions). On only with ASYNCMLP_LT=1 (util/env.h):
// cuBLAS's SGEMM and a pass measured faster on an H200 (docs/gpu.md). Worker thread only.
//
//   LtGemms lt;  lt.start(stream, workspace, bytes);
//   if (!lt.linear(x, w, b, y, B, in, out, /*relu=*/true, /*tf32=*/false)) compose();
#pragma once
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <tuple>

namespace amlp::cuda {

class LtGemms {
 public:
  LtGemms() = default;
  ~LtGemms();
  LtGemms(const LtGemms&) = delete;
  LtGemms& operator=(const LtGemms&) = delete;

  // Makes the handle; the workspace is shared with cuBLAS (one stream: they
  // never run at once). Off (every call returns false) unless ASYNCMLP_LT=1.
  // `on`: the backend passes env_settings().lt_epilogues.
  void start(cudaStream_t stream, void* workspace, size_t workspace_bytes, bool on);
  void stop() noexcept;  // frees the plans and the handle (before the stream goes)
  void abandon() noexcept { plans_.clear(), handle_ = nullptr; }  // the runtime is gone: leak them

  // y = act(x·Wᵀ + b): launched and true, or false (nothing launched).
  bool linear(const float* x, const float* w, const float* b, float* y, int B, int in, int out, bool relu,
              bool tf32);
  // dW = dzᵀ·x and, when db is not null, db = Σ_r dz: launched and true, or false.
  bool grad_weight(const float* dz, const float* x, float* dw, float* db, int B, int in, int out, bool tf32);
  // y = max(x·Wᵀ + b, 0) and its mask (core/backend/kernels.h's relu_mask_words):
  // launched and true, or false.
  bool linear_relu_mask(const float* x, const float* w, const float* b, float* y, uint32_t* mask, int B, int in,
                        int out, bool tf32);
  // dz = (g·W)·mask and, when db is not null, db = Σ_r dz; g (B,out), W
  // (out,in), dz (B,in), mask the one linear_relu_mask wrote for a (B,in)
  // output: launched and true, or false.
  bool grad_input_relu(const float* g, const float* w, const uint32_t* mask, float* dz, float* db, int B, int in,
                       int out, bool tf32);

  struct Stats {
    uint64_t fused = 0;     // launches through cuBLASLt
    uint64_t composed = 0;  // calls that found no plan (the caller composed)
  };
  Stats stats() const { return stats_; }
  bool enabled() const { return handle_ != nullptr; }

 private:
  struct Plan {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
    cublasLtMatmulAlgo_t algo{};
    bool ok = false;
  };
  // (kind, m, n, k, epilogue, tf32, alignment)
  using Key = std::tuple<int, int, int, int, int, bool, unsigned>;
  Plan& plan(const Key& key, bool trans_a, bool trans_b, int lda, int ldb, int ldd, const void* bias = nullptr,
             const void* aux = nullptr);
  bool run(Plan& p, const void* bias, const float* A, const float* Bm, float* D, const void* aux = nullptr);

  cublasLtHandle_t handle_ = nullptr;
  cudaStream_t stream_ = nullptr;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
  std::map<Key, Plan> plans_;
  Stats stats_;
};

}  // namespace amlp::cuda
