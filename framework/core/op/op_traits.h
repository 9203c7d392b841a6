// op_traits.h — what an op needs beyond its device's stream, declared by
// the op itself (enqueue.h: its name with its traits) and read by step
// graphs (step_graph.h) to decide what may be recorded.
//
//   enqueue(c, {"to_host", kWaitsForHost}, {&x}, {}, {pointer_bits(dst), bytes}, kernel);
#pragma once

namespace amlp {

struct OpTraits {
  // Its kernel stages through host memory or waits for the device's answer
  // (a copy to or from the host, a finite check read back, MPI): a stream
  // being recorded cannot; a step with it runs op by op.
  bool waits_for_host = false;
  // It completes only with other queues' or ranks' ops (an all-reduce): its
  // steps are recognised, but launched op by op, never as one device graph.
  bool collective = false;
  // Its launch may be recorded and replayed (false for a timer's event, which
  // must mark the moment it was queued for, and for whatever waits for the host).
  bool recordable = true;
};

inline constexpr OpTraits kWaitsForHost{/*waits_for_host=*/true, /*collective=*/false, /*recordable=*/false};
inline constexpr OpTraits kCollective{/*waits_for_host=*/false, /*collective=*/true, /*recordable=*/true};
inline constexpr OpTraits kCollectiveViaHost{/*waits_for_host=*/true, /*collective=*/true, /*recordable=*/false};

}  // namespace amlp
