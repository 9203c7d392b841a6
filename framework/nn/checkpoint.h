// checkpoint.h — a network's parameters in a safetensors file (the format of
// Hugging Face's `safetensors`, which PyTorch and NumPy read): an 8-byte
// little-endian header length, a JSON header naming each tensor with its
// dtype ("F32"), shape and byte offsets, then the little-endian float32 data.
//
//   save_parameters("mlp.safetensors", net);    // waits for the values; the file whole or absent
//   load_parameters("mlp.safetensors", net);    // the values queued onto each parameter's device
//
// A network's tensors are named by layer and role: "dense0.weight",
// "dense0.bias", "dense1.weight", ... (layer i of a Sequential, the
// parameter's name within it). Every failure is one amlp::Error naming the
// file: unreadable, not safetensors (and why), a dtype other than F32, a
// tensor the model lacks or lacks in the file, or shapes that disagree (both
// named).
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "framework/nn/block.h"
#include "framework/nn/safetensors.h"
#include "framework/nn/sequential.h"

namespace amlp {

// The named tensors, in order, as one safetensors file (written whole or not
// at all: framework/write_file.h). Blocks until each tensor's value is known.
// A value that is NaN or infinite (which the reader refuses) is an Error
// naming the tensor, and nothing is written.
void save_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors);
// read_safetensors: framework/nn/safetensors.h.

// The parameters of `net` by name ("dense0.weight", ...), in its order;
// empty until the network is initialised (its first forward).
std::vector<std::pair<std::string, Parameter*>> named_parameters(Sequential& net);
void save_parameters(const std::string& path, Sequential& net);
// Checks the file against `net`'s parameters (every name, every shape, every
// value finite) before writing any, then copies each into its parameter
// (queued; the parameter keeps its device and requires_grad). The second form
// takes the tensors read already (read_safetensors: a pipe is read once);
// `path` names them in messages.
void load_parameters(const std::string& path, Sequential& net);
void load_parameters(const std::string& path, const std::vector<NamedValues>& got, Sequential& net);
// The same check alone, against the shapes a model will have: "" when the
// file fits, else one line naming the tensor (and both shapes, or the value
// that is NaN or infinite).
std::string parameters_problem(const std::string& path, const std::vector<std::pair<std::string, Shape>>& want);
std::string parameters_problem(const std::string& path, const std::vector<NamedValues>& got,
                               const std::vector<std::pair<std::string, Shape>>& want);

// How saving and loading move tensors to and from their device: a run of
// consecutive tensors of one device, up to `bytes` or `tensors`, by one pack
// or unpack_ op and one host copy (a model of 100,000 layers has 200,000
// tensors: a few dozen ops, not 200,000); a tensor of `bytes` or more alone,
// as it is. The defaults suit any model; the tests cross the limits at small
// sizes. Set them while no save or load runs; each is at least 1.
struct ChunkLimits {
  size_t bytes = size_t{8} << 20;
  size_t tensors = 8192;
};
ChunkLimits checkpoint_chunk_limits();
void set_checkpoint_chunk_limits(ChunkLimits limits);

}  // namespace amlp
