// safetensors.h — reading a safetensors file (the format of Hugging Face's
// `safetensors`): an 8-byte little-endian header length, a JSON header naming
// each tensor with its dtype, shape and byte offsets, then the little-endian
// data. Float32 ("F32") tensors only. Depends on nothing but the file reader
// (framework/read_input.h), so that tools/fuzz_safetensors.sh fuzzes it alone.
//
//   std::vector<NamedValues> ts = read_safetensors("mlp.safetensors");   // throws amlp::Error
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace amlp {

// A tensor read from a file: its name, shape and values.
struct NamedValues {
  std::string name;
  std::vector<int64_t> shape;  // a Shape (framework/tensor.h)
  std::vector<float> values;
};

// Every tensor of a safetensors file, in the order of their offsets; throws
// amlp::Error ("<path>: ...") for anything it cannot take or that breaks the
// format's rules (a key twice, offsets with a hole or an overlap, bytes after
// the data, a __metadata__ value that is not a string). The file is read once
// (framework/read_input.h): a regular file, or a FIFO or pipe; a directory or
// a silent FIFO is an error, /dev/zero a header of 0 bytes.
// `wait_s`: how long a FIFO or pipe may stay silent.
std::vector<NamedValues> read_safetensors(const std::string& path, int wait_s = 5);

}  // namespace amlp
