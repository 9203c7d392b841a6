// candidates.h — the candidates ASYNCMLP_CANDIDATES turns on (util/env.h
// reads it once): GPU kernels and an engine behaviour built beside the
// default and off until a measurement chose them (docs/gpu.md, "Candidates").
// A light header: the kernel table's compositions and the queue's worker ask
// candidate_on().
#pragma once

namespace amlp {

// The candidates ASYNCMLP_CANDIDATES names, a bit each.
enum Candidate : unsigned {
  // A layer of one output unit (the d2l MLP's last): its forward y = x·wᵀ + b
  // as a GEMV kernel of ours (a warp per row) instead of cuBLAS's GEMM.
  kCandidateOutGemv = 1u << 0,
  // That layer's input gradient through the ReLU before it: the outer
  // product g·w, the mask and the bias gradient's column sums in one kernel
  // (relu_backward_outer_sum_rows) instead of a GEMM of K = 1 and a pass.
  kCandidateOutGrad = 1u << 1,
  // The engine, on every device: a worker that has caught up watches for the
  // next push for up to 50 µs (yielding) before it sleeps, so a frontend that
  // pushes every few microseconds (Python's) finds it awake and pays no futex
  // wake, and a barrier's round trip loses the worker's wake-up.
  kCandidateWorkerSpin = 1u << 2,
};
struct CandidateInfo {
  const char* name;
  Candidate bit;
  const char* what;
};
extern const CandidateInfo kCandidates[3];
// Whether ASYNCMLP_CANDIDATES turned `c` on in this process.
bool candidate_on(Candidate c);

}  // namespace amlp
