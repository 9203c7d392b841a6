// libraries.h — cuBLAS, cuBLASLt, cuRAND and NCCL are opened on their first
// call (dlopen), not as the program starts: a run on the CPU never maps
// them (about 950 MB of address space, cuBLASLt's start-up among it, which
// a `ulimit -v` of a gigabyte does not survive), and a machine without them
// fails its first CUDA op with one line instead of failing to start.
// libraries.cpp defines each function the framework calls, with the
// library's own signature, as a call through the symbol found there; where
// the library cannot be opened, the function returns its library's error
// status, and the status string names the file and why.
//
//   if (std::string why = library_problem(CudaLibrary::kCublas); !why.empty()) ...
//   opened_libraries()     // 0 until a CUDA op has needed one of them
#pragma once
#include <string>

namespace amlp::cuda {

enum class CudaLibrary { kCublas, kCublasLt, kCurand, kNccl };

// "" once `lib` is open (opening it on the first call); else one line: the
// file and dlopen's reason.
std::string library_problem(CudaLibrary lib);

// How many of the four this process has opened so far.
int opened_libraries();

}  // namespace amlp::cuda
