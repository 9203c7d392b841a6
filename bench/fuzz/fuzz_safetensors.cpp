// fuzz_safetensors.cpp — libFuzzer target for the safetensors reader
// (framework/nn/safetensors.h): any bytes, as a file, are either refused with
// one amlp::Error line naming the file or read into tensors whose values fit
// their shapes and whose bytes the file held. The bytes go through a memfd,
// so the reader runs as it does on a file (framework/read_input.h). Built and
// run by tools/fuzz_safetensors.sh (clang's -fsanitize=fuzzer with ASan and UBSan).
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "framework/error.h"
#include "framework/nn/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const int fd = memfd_create("fuzz.safetensors", 0);
  static const std::string path = "/proc/self/fd/" + std::to_string(fd);
  if (fd < 0 || ftruncate(fd, 0) != 0) __builtin_trap();
  for (size_t at = 0; at < size;) {
    const ssize_t n = pwrite(fd, data + at, size - at, static_cast<off_t>(at));
    if (n <= 0) __builtin_trap();
    at += static_cast<size_t>(n);
  }
  try {
    size_t value_bytes = 0;
    for (const amlp::NamedValues& t : amlp::read_safetensors(path)) {
      uint64_t count = 1;
      for (int64_t d : t.shape) count *= static_cast<uint64_t>(d);
      if (count != t.values.size()) __builtin_trap();  // values that do not fit the shape
      value_bytes += 4 * t.values.size();
    }
    if (value_bytes + 8 > size) __builtin_trap();  // more values than the file held
  } catch (const amlp::Error& e) {
    const std::string what = e.what();
    if (what.find('\n') != std::string::npos || what.rfind("'" + path + "'", 0) != 0) __builtin_trap();
  }
  return 0;
}
