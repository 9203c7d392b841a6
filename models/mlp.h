// mlp.h — the d2l MLP, built from a layer spec.
//
//   LayerSpec spec = parse_layer_spec("2048,512");   // hidden widths, ReLU each
//   auto net = make_mlp(spec, /*outputs=*/1);          // Dense(2048,relu) → Dense(512,relu) → Dense(1)
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "framework/nn/sequential.h"

namespace amlp::models {

struct LayerSpec {
  std::vector<int64_t> hidden;  // widths of the ReLU layers, in order
};

// Widest hidden layer a spec may ask for.
constexpr int64_t kMaxLayerWidth = int64_t(1) << 20;

// "2048,512" → {2048, 512}; "" → no hidden layer. Throws amlp::ParseError
// (framework/parse.h) naming the spec, the bad item and the range
// [1, kMaxLayerWidth] for an empty item, a non-number or a width out of range
// ("2048,,x", "2048,0").
LayerSpec parse_layer_spec(const std::string& spec);
std::string to_string(const LayerSpec& spec);

// Dense(h, relu) for each hidden width, then Dense(outputs). The input width
// is inferred at the first forward.
std::unique_ptr<Sequential> make_mlp(const LayerSpec& spec, int64_t outputs = 1);

}  // namespace amlp::models
