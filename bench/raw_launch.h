// raw_launch.h — the floor under the engine's per-op cost on a GPU: the
// kernel behind add_scalar (one element), launched from a bare loop on a
// stream of its own with the same grid, no engine in between.
#pragma once

namespace amlp::bench {

// Seconds from the first launch until the last of `launches` returned to the
// host (the GPU may still be running them; it is waited for afterwards,
// untimed). Throws std::runtime_error naming the CUDA error.
double raw_launch_seconds(int launches);

}  // namespace amlp::bench
