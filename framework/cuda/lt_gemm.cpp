// lt_gemm.cpp — the fused Dense GEMMs through cuBLASLt (lt_gemm.h).
#include "framework/cuda/lt_gemm.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "framework/cuda/cuda_check.h"

namespace amlp::cuda {

namespace {
enum Kind { kForward = 0, kGradWeight = 1, kForwardMask = 2, kGradInputRelu = 3 };

// The mask's leading dimension in bits for an output of m rows (column-major).
int64_t mask_ld(int m) { return (static_cast<int64_t>(m) + 127) / 128 * 128; }

// The largest power of two (at most 256) dividing every address: the plan's
// minimum alignment, so an algorithm that needs more is never chosen.
unsigned alignment(std::initializer_list<const void*> ps) {
  unsigned a = 256;
  for (const void* p : ps)
    if (p)
      while (a > 4 && reinterpret_cast<uintptr_t>(p) % a != 0) a /= 2;
  return a;
}

template <typename T>
void set_attr(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr, const T& v) {
  AMLP_CUDA_CHECK(cublasLtMatmulDescSetAttribute(d, attr, &v, sizeof(v)));
}
}  // namespace

LtGemms::~LtGemms() { stop(); }

void LtGemms::start(cudaStream_t stream, void* workspace, size_t workspace_bytes, bool on) {
  if (!on) return;  // the composition everywhere
  AMLP_CUDA_CHECK(cublasLtCreate(&handle_));
  stream_ = stream;
  workspace_ = workspace;
  workspace_bytes_ = workspace_bytes;
}

void LtGemms::stop() noexcept {
  for (auto& [key, p] : plans_) {
    if (p.desc) AMLP_CUDA_CHECK_LOG(cublasLtMatmulDescDestroy(p.desc));
    for (cublasLtMatrixLayout_t l : {p.a, p.b, p.d})
      if (l) AMLP_CUDA_CHECK_LOG(cublasLtMatrixLayoutDestroy(l));
  }
  plans_.clear();
  if (handle_) AMLP_CUDA_CHECK_LOG(cublasLtDestroy(handle_));
  handle_ = nullptr;
}

// A column-major problem D(m,n) = op(A)·op(B) (+ epilogue). lda/ldb/ldd are
// the leading dimensions of A, B, D as stored.
// bias and aux: the first call's pointers, which the heuristic reads for
// their alignment (the key holds it).
LtGemms::Plan& LtGemms::plan(const Key& key, bool trans_a, bool trans_b, int lda, int ldb, int ldd, const void* bias,
                             const void* aux) {
  auto it = plans_.find(key);
  if (it != plans_.end()) return it->second;
  Plan& p = plans_[key];
  const auto [kind, m, n, k, epilogue, tf32, align] = key;
  (void)kind;
  AMLP_CUDA_CHECK(cublasLtMatmulDescCreate(&p.desc, tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F,
                                           CUDA_R_32F));
  set_attr(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N);
  set_attr(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N);
  set_attr(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, static_cast<cublasLtEpilogue_t>(epilogue));
  if (bias) set_attr(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias);
  if (aux) {
    set_attr(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, aux);
    set_attr(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, mask_ld(m));
  }
  // As stored: A is (m,k), or (k,m) transposed; B (k,n), or (n,k).
  AMLP_CUDA_CHECK(cublasLtMatrixLayoutCreate(&p.a, CUDA_R_32F, trans_a ? k : m, trans_a ? m : k, std::max(lda, 1)));
  AMLP_CUDA_CHECK(cublasLtMatrixLayoutCreate(&p.b, CUDA_R_32F, trans_b ? n : k, trans_b ? k : n, std::max(ldb, 1)));
  AMLP_CUDA_CHECK(cublasLtMatrixLayoutCreate(&p.d, CUDA_R_32F, m, n, std::max(ldd, 1)));
  cublasLtMatmulPreference_t pref = nullptr;
  AMLP_CUDA_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  const size_t ws = workspace_bytes_;
  const uint32_t al = align;
  cublasStatus_t st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
  for (auto attr : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
    if (st == CUBLAS_STATUS_SUCCESS) st = cublasLtMatmulPreferenceSetAttribute(pref, attr, &al, sizeof(al));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  if (st == CUBLAS_STATUS_SUCCESS)
    st = cublasLtMatmulAlgoGetHeuristic(handle_, p.desc, p.a, p.b, p.d, p.d, pref, 1, &result, &found);
  AMLP_CUDA_CHECK_LOG(cublasLtMatmulPreferenceDestroy(pref));
  p.ok = st == CUBLAS_STATUS_SUCCESS && found > 0 && result.state == CUBLAS_STATUS_SUCCESS;
  if (p.ok) p.algo = result.algo;
  return p;
}

bool LtGemms::run(Plan& p, const void* bias, const float* A, const float* Bm, float* D, const void* aux) {
  if (!p.ok) {
    ++stats_.composed;
    return false;
  }
  if (bias) set_attr(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias);
  if (aux) set_attr(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, aux);
  const float one = 1.f, zero = 0.f;
  AMLP_CUDA_CHECK(cublasLtMatmul(handle_, p.desc, &one, A, p.a, Bm, p.b, &zero, D, p.d, D, p.d, &p.algo, workspace_,
                                 workspace_bytes_, stream_));
  ++stats_.fused;
  return true;
}

bool LtGemms::linear(const float* x, const float* w, const float* b, float* y, int B, int in, int out, bool relu,
                     bool tf32) {
  if (!handle_ || B <= 0 || out <= 0 || in <= 0) return false;
  const cublasLtEpilogue_t epi = b ? (relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS)
                                   : (relu ? CUBLASLT_EPILOGUE_RELU : CUBLASLT_EPILOGUE_DEFAULT);
  // D(out,B) = op(A)·B with A = W stored (in,out) transposed, B = xᵀ stored (in,B).
  const Key key{kForward, out, B, in, static_cast<int>(epi), tf32, alignment({x, w, b, y})};
  return run(plan(key, /*trans_a=*/true, /*trans_b=*/false, in, in, out), b, w, x, y);
}

bool LtGemms::grad_weight(const float* dz, const float* x, float* dw, float* db, int B, int in, int out, bool tf32) {
  if (!handle_ || B <= 0 || out <= 0 || in <= 0) return false;
  const cublasLtEpilogue_t epi = db ? CUBLASLT_EPILOGUE_BGRADB : CUBLASLT_EPILOGUE_DEFAULT;
  // D(in,out) = A·op(B) with A = xᵀ stored (in,B), B = dzᵀ stored (out,B) transposed; k = B.
  const Key key{kGradWeight, in, out, B, static_cast<int>(epi), tf32, alignment({dz, x, dw, db})};
  return run(plan(key, /*trans_a=*/false, /*trans_b=*/true, in, out, in), db, x, dz, dw);
}

bool LtGemms::linear_relu_mask(const float* x, const float* w, const float* b, float* y, uint32_t* mask, int B,
                               int in, int out, bool tf32) {
  if (!handle_ || B <= 0 || out <= 0 || in <= 0 || !mask) return false;
  const cublasLtEpilogue_t epi = b ? CUBLASLT_EPILOGUE_RELU_AUX_BIAS : CUBLASLT_EPILOGUE_RELU_AUX;
  // As linear(): D(out,B) = op(A)·B, the mask over D's (out,B), ld mask_ld(out).
  const Key key{kForwardMask, out, B, in, static_cast<int>(epi), tf32, alignment({x, w, b, y, mask})};
  return run(plan(key, /*trans_a=*/true, /*trans_b=*/false, in, in, out, b, mask), b, w, x, y, mask);
}

bool LtGemms::grad_input_relu(const float* g, const float* w, const uint32_t* mask, float* dz, float* db, int B,
                              int in, int out, bool tf32) {
  if (!handle_ || B <= 0 || out <= 0 || in <= 0 || !mask) return false;
  const cublasLtEpilogue_t epi = db ? CUBLASLT_EPILOGUE_DRELU_BGRAD : CUBLASLT_EPILOGUE_DRELU;
  // dzᵀ(in,B) = Wᵀ·gᵀ column-major: A = W stored (in,out) with ld in, B = gᵀ
  // stored (out,B) with ld out; the mask over D's (in,B) is the forward's of
  // the layer below, whose output this is; BGRAD sums D's rows over the batch.
  const Key key{kGradInputRelu, in, B, out, static_cast<int>(epi), tf32, alignment({g, w, mask, dz, db})};
  return run(plan(key, /*trans_a=*/false, /*trans_b=*/false, in, out, in, db, mask), db, w, g, dz, mask);
}

}  // namespace amlp::cuda
