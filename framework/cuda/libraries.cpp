// libraries.cpp — cuBLAS, cuBLASLt, cuRAND and NCCL opened on first use
// (libraries.h). Each function below has its header's exact signature (a C
// function declared twice with two signatures does not compile) and calls
// the library's own symbol, looked up once.
#include "framework/cuda/libraries.h"

#include <cublasLt.h>
#include <cublas_v2.h>
#include <curand.h>
#include <dlfcn.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#if ASYNCMLP_WITH_NCCL
#include <nccl.h>
#endif

namespace amlp::cuda {

namespace {

#define AMLP_STR2(x) #x
#define AMLP_STR(x) AMLP_STR2(x)

#ifndef ASYNCMLP_CUDA_LIBRARY_DIR
#define ASYNCMLP_CUDA_LIBRARY_DIR ""
#endif
#ifndef ASYNCMLP_NCCL_LIBRARY_DIR
#define ASYNCMLP_NCCL_LIBRARY_DIR ""
#endif

struct Library {
  const char* file;  // the soname the toolkit's headers were built against
  const char* dir;   // where the build found it: tried second
  std::once_flag once;
  void* handle = nullptr;
  std::string problem;  // set once, before `once` completes: its c_str() stays valid
};

Library libraries[] = {
    {"libcublas.so." AMLP_STR(CUBLAS_VER_MAJOR), ASYNCMLP_CUDA_LIBRARY_DIR, {}, nullptr, {}},
    {"libcublasLt.so." AMLP_STR(CUBLAS_VER_MAJOR), ASYNCMLP_CUDA_LIBRARY_DIR, {}, nullptr, {}},
    {"libcurand.so." AMLP_STR(CURAND_VER_MAJOR), ASYNCMLP_CUDA_LIBRARY_DIR, {}, nullptr, {}},
#if ASYNCMLP_WITH_NCCL
    {"libnccl.so." AMLP_STR(NCCL_MAJOR), ASYNCMLP_NCCL_LIBRARY_DIR, {}, nullptr, {}},
#else
    {"libnccl.so.2", ASYNCMLP_NCCL_LIBRARY_DIR, {}, nullptr, {}},
#endif
};
std::atomic<int> opened{0};

Library& open(CudaLibrary which) {
  Library& lib = libraries[static_cast<int>(which)];
  std::call_once(lib.once, [&lib] {
    lib.handle = dlopen(lib.file, RTLD_NOW | RTLD_LOCAL);  // the loader's search: LD_LIBRARY_PATH, RUNPATH, ld.so.cache
    const char* why = lib.handle ? nullptr : dlerror();
    std::string first = why ? why : "unknown reason";
    if (!lib.handle && *lib.dir) lib.handle = dlopen((std::string(lib.dir) + "/" + lib.file).c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib.handle) {
      opened.fetch_add(1);
      return;
    }
    lib.problem = std::string(lib.file) + " could not be opened (" + first + ")";
  });
  return lib;
}

// The library's `name`, or null (where the library is missing, its problem says why).
void* symbol(CudaLibrary which, const char* name) {
  Library& lib = open(which);
  return lib.handle ? dlsym(lib.handle, name) : nullptr;
}

const char* problem_text(CudaLibrary which) {
  const Library& lib = open(which);
  return lib.problem.empty() ? "the library has no such function" : lib.problem.c_str();
}

}  // namespace

std::string library_problem(CudaLibrary lib) { return open(lib).problem; }

int opened_libraries() { return opened.load(); }

}  // namespace amlp::cuda

using amlp::cuda::CudaLibrary;

// A function `name` of library `lib`: (params) declared, (args) passed on;
// `fail` returned where the library or the symbol is missing.
#define AMLP_FORWARD(lib, ret, fail, name, params, args)                                                    \
  extern "C" ret name params {                                                                            \
    static const auto fn = reinterpret_cast<decltype(&name)>(amlp::cuda::symbol(CudaLibrary::lib, #name)); \
    if (!fn) return fail;                                                                                 \
    return fn args;                                                                                       \
  }

// cuBLAS
#define AMLP_CUBLAS(name, params, args) AMLP_FORWARD(kCublas, cublasStatus_t, CUBLAS_STATUS_NOT_INITIALIZED, name, params, args)
AMLP_CUBLAS(cublasCreate_v2, (cublasHandle_t * handle), (handle))
AMLP_CUBLAS(cublasDestroy_v2, (cublasHandle_t handle), (handle))
AMLP_CUBLAS(cublasSetWorkspace_v2, (cublasHandle_t handle, void* workspace, size_t bytes), (handle, workspace, bytes))
AMLP_CUBLAS(cublasSetStream_v2, (cublasHandle_t handle, cudaStream_t stream), (handle, stream))
AMLP_CUBLAS(cublasSetMathMode, (cublasHandle_t handle, cublasMath_t mode), (handle, mode))
AMLP_CUBLAS(cublasSgemm_v2,
            (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
             const float* alpha, const float* A, int lda, const float* B, int ldb, const float* beta, float* C, int ldc),
            (handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc))
AMLP_FORWARD(kCublas, const char*, amlp::cuda::problem_text(CudaLibrary::kCublas), cublasGetStatusString,
             (cublasStatus_t status), (status))

// cuBLASLt
#define AMLP_CUBLASLT(name, params, args) \
  AMLP_FORWARD(kCublasLt, cublasStatus_t, CUBLAS_STATUS_NOT_INITIALIZED, name, params, args)
AMLP_CUBLASLT(cublasLtCreate, (cublasLtHandle_t * handle), (handle))
AMLP_CUBLASLT(cublasLtDestroy, (cublasLtHandle_t handle), (handle))
AMLP_CUBLASLT(cublasLtMatmul,
              (cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void* alpha, const void* A,
               cublasLtMatrixLayout_t Adesc, const void* B, cublasLtMatrixLayout_t Bdesc, const void* beta,
               const void* C, cublasLtMatrixLayout_t Cdesc, void* D, cublasLtMatrixLayout_t Ddesc,
               const cublasLtMatmulAlgo_t* algo, void* workspace, size_t workspace_bytes, cudaStream_t stream),
              (handle, desc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc, algo, workspace, workspace_bytes,
               stream))
AMLP_CUBLASLT(cublasLtMatrixLayoutCreate,
              (cublasLtMatrixLayout_t * layout, cudaDataType type, uint64_t rows, uint64_t cols, int64_t ld),
              (layout, type, rows, cols, ld))
AMLP_CUBLASLT(cublasLtMatrixLayoutDestroy, (cublasLtMatrixLayout_t layout), (layout))
AMLP_CUBLASLT(cublasLtMatmulDescCreate,
              (cublasLtMatmulDesc_t * desc, cublasComputeType_t compute, cudaDataType_t scale), (desc, compute, scale))
AMLP_CUBLASLT(cublasLtMatmulDescDestroy, (cublasLtMatmulDesc_t desc), (desc))
AMLP_CUBLASLT(cublasLtMatmulDescSetAttribute,
              (cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, const void* buf, size_t bytes),
              (desc, attr, buf, bytes))
AMLP_CUBLASLT(cublasLtMatmulPreferenceCreate, (cublasLtMatmulPreference_t * pref), (pref))
AMLP_CUBLASLT(cublasLtMatmulPreferenceDestroy, (cublasLtMatmulPreference_t pref), (pref))
AMLP_CUBLASLT(cublasLtMatmulPreferenceSetAttribute,
              (cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr, const void* buf,
               size_t bytes),
              (pref, attr, buf, bytes))
AMLP_CUBLASLT(cublasLtMatmulAlgoGetHeuristic,
              (cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t Adesc,
               cublasLtMatrixLayout_t Bdesc, cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
               cublasLtMatmulPreference_t pref, int requested, cublasLtMatmulHeuristicResult_t results[],
               int* returned),
              (handle, desc, Adesc, Bdesc, Cdesc, Ddesc, pref, requested, results, returned))

// cuRAND
#define AMLP_CURAND(name, params, args) \
  AMLP_FORWARD(kCurand, curandStatus_t, CURAND_STATUS_INITIALIZATION_FAILED, name, params, args)
AMLP_CURAND(curandCreateGenerator, (curandGenerator_t * generator, curandRngType_t type), (generator, type))
AMLP_CURAND(curandDestroyGenerator, (curandGenerator_t generator), (generator))
AMLP_CURAND(curandSetStream, (curandGenerator_t generator, cudaStream_t stream), (generator, stream))
AMLP_CURAND(curandSetPseudoRandomGeneratorSeed, (curandGenerator_t generator, unsigned long long seed),
            (generator, seed))
AMLP_CURAND(curandSetGeneratorOffset, (curandGenerator_t generator, unsigned long long offset), (generator, offset))
AMLP_CURAND(curandGenerateUniform, (curandGenerator_t generator, float* out, size_t n), (generator, out, n))
AMLP_CURAND(curandGenerateNormal, (curandGenerator_t generator, float* out, size_t n, float mean, float stddev),
            (generator, out, n, mean, stddev))

#if ASYNCMLP_WITH_NCCL
// NCCL
#define AMLP_NCCL(name, params, args) AMLP_FORWARD(kNccl, ncclResult_t, ncclSystemError, name, params, args)
AMLP_NCCL(ncclGetUniqueId, (ncclUniqueId * id), (id))
AMLP_NCCL(ncclCommInitRank, (ncclComm_t * comm, int nranks, ncclUniqueId id, int rank), (comm, nranks, id, rank))
AMLP_NCCL(ncclCommInitAll, (ncclComm_t * comms, int ndev, const int* devices), (comms, ndev, devices))
AMLP_NCCL(ncclCommGetAsyncError, (ncclComm_t comm, ncclResult_t * error), (comm, error))
AMLP_NCCL(ncclCommAbort, (ncclComm_t comm), (comm))
AMLP_NCCL(ncclAllReduce,
          (const void* send, void* recv, size_t count, ncclDataType_t type, ncclRedOp_t op, ncclComm_t comm,
           cudaStream_t stream),
          (send, recv, count, type, op, comm, stream))
AMLP_FORWARD(kNccl, const char*, amlp::cuda::problem_text(CudaLibrary::kNccl), ncclGetErrorString,
             (ncclResult_t result), (result))
#endif
