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
// Plans (descriptors, layouts and the heuristic's candidate algorithms) are
// made once per shape, math mode and pointer alignment, on the worker
// thread, and reused: a launch sets the pointers and calls cublasLtMatmul.
// The algorithm is chosen by measurement (ASYNCMLP_LT_TUNE, on unless "0"):
// on the plan's first use outside a graph recording, each of the heuristic's
// candidates and the caller's composition (the GEMM and a pass, which the
// caller hands in) run kTimedRuns times between two events, and the fastest
// is kept for the process: the composition too, when it wins (the fused
// epilogues are not always faster in FP32). A first use inside a recording,
// or tuning off, keeps the heuristic's first. A shape for which cuBLASLt
// offers no algorithm, or whose composition won, returns false and the
// caller composes (core/kernels.h's compositions). ASYNCMLP_LT=0 turns the
// fusion off, for comparison. Worker thread only.
//
//   LtGemms lt;  lt.start(stream, workspace, bytes);
//   auto compose = [&] { ... };
//   if (!lt.linear(x, w, b, y, B, in, out, /*relu=*/true, /*tf32=*/false, compose_ref(compose))) compose();
#pragma once
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <tuple>

namespace amlp::cuda {

// A non-owning reference to the caller's composition of a fused GEMM, which
// the tuning times beside cuBLASLt's candidates (no allocation per call).
struct ComposeRef {
  void (*fn)(const void*) = nullptr;
  const void* ctx = nullptr;
  void operator()() const { fn(ctx); }
};
template <class F>
ComposeRef compose_ref(const F& f) {
  return {[](const void* c) { (*static_cast<const F*>(c))(); }, &f};
}

class LtGemms {
 public:
  LtGemms() = default;
  ~LtGemms();
  LtGemms(const LtGemms&) = delete;
  LtGemms& operator=(const LtGemms&) = delete;

  // Makes the handle; the workspace is shared with cuBLAS (one stream: they
  // never run at once). Off (every call returns false) with ASYNCMLP_LT=0.
  void start(cudaStream_t stream, void* workspace, size_t workspace_bytes);
  void stop() noexcept;
  void set_tuning(bool on) { tune_ = on; }  // for plans made from now on (start: ASYNCMLP_LT_TUNE)  // frees the plans and the handle (before the stream goes)
  void abandon() noexcept { plans_.clear(), handle_ = nullptr, timer_[0] = timer_[1] = nullptr; }  // the runtime is gone: leak them

  // Each returns true once launched, or false with nothing launched: then
  // the caller runs `compose` (which computes the same outputs).
  // y = act(x·Wᵀ + b).
  bool linear(const float* x, const float* w, const float* b, float* y, int B, int in, int out, bool relu, bool tf32,
              ComposeRef compose);
  // dW = dzᵀ·x and, when db is not null, db = Σ_r dz.
  bool grad_weight(const float* dz, const float* x, float* dw, float* db, int B, int in, int out, bool tf32,
                   ComposeRef compose);
  // y = max(x·Wᵀ + b, 0) and its mask (core/kernels.h's relu_mask_words).
  bool linear_relu_mask(const float* x, const float* w, const float* b, float* y, uint32_t* mask, int B, int in,
                        int out, bool tf32, ComposeRef compose);
  // dz = (g·W)·mask and, when db is not null, db = Σ_r dz; g (B,out), W
  // (out,in), dz (B,in), mask the one linear_relu_mask wrote for a (B,in) output.
  bool grad_input_relu(const float* g, const float* w, const uint32_t* mask, float* dz, float* db, int B, int in,
                       int out, bool tf32, ComposeRef compose);

  struct Stats {
    uint64_t fused = 0;     // launches through cuBLASLt
    uint64_t composed = 0;  // calls the caller composed (no plan, or the composition timed faster)
    uint64_t no_plan = 0;   // of those, calls for which cuBLASLt offered no algorithm
    uint64_t tuned = 0;     // plans timed (ASYNCMLP_LT_TUNE)
    uint64_t declined = 0;  // of those, where the composition was the fastest
  };
  Stats stats() const { return stats_; }
  bool enabled() const { return handle_ != nullptr; }

 private:
  static constexpr int kCandidates = 8;  // the heuristic's algorithms timed per plan
  static constexpr int kTimedRuns = 3;   // launches per candidate, after one untimed
  struct Plan {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
    cublasLtMatmulAlgo_t candidates[kCandidates]{};
    int count = 0;               // candidates found
    cublasLtMatmulAlgo_t algo{};  // the one launched
    bool ok = false;             // launch it (else the caller composes)
    bool final = false;          // the choice is made (timed, or not to be)
  };
  // (kind, m, n, k, epilogue, tf32, alignment)
  using Key = std::tuple<int, int, int, int, int, bool, unsigned>;
  Plan& plan(const Key& key, bool trans_a, bool trans_b, int lda, int ldb, int ldd, const void* bias = nullptr,
             const void* aux = nullptr);
  bool run(Plan& p, const void* bias, const float* A, const float* Bm, float* D, const void* aux, ComposeRef compose);
  cublasStatus_t launch(Plan& p, const cublasLtMatmulAlgo_t& algo, const void* bias, const float* A, const float* Bm, float* D,
              const void* aux);
  void tune(Plan& p, const void* bias, const float* A, const float* Bm, float* D, const void* aux, ComposeRef compose);

  cublasLtHandle_t handle_ = nullptr;
  cudaStream_t stream_ = nullptr;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
  std::map<Key, Plan> plans_;
  Stats stats_;
  bool tune_ = true;
  cudaEvent_t timer_[2] = {nullptr, nullptr};  // the tuning's clock, made on first use
};

}  // namespace amlp::cuda
