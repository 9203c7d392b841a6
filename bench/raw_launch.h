// raw_launch.h — the floor under the engine's per-op cost on a GPU: the
// kernel behind add_scalar (one element), launched from a bare loop on a
// stream of its own with the same grid, no engine in between; and the floor
// under recording a step of such launches as a CUDA graph.
#pragma once

namespace amlp::bench {

// Seconds from the first launch until the last of `launches` returned to the
// host (the GPU may still be running them; it is waited for afterwards,
// untimed). Throws std::runtime_error naming the CUDA error.
double raw_launch_seconds(int launches);

// Seconds for `steps` steps, each the same kernel launched `kernels` times
// inside a stream capture (its argument changed every step), the captured
// graph put into one executable graph (instantiated once, then
// cudaGraphExecUpdate) and launched: the floor under recording a step each
// step. Until the last launch returned to the host.
double raw_capture_seconds(int kernels, int steps);

}  // namespace amlp::bench
