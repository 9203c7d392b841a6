// fuzz_npy.cpp — libFuzzer target for the .npy reader (train/options/npy_file.h):
// any bytes are either refused with NpyError or parsed into a header whose
// shape fits the bytes given, every row of which is then read. Built and run
// by tools/fuzz_npy.sh (clang's -fsanitize=fuzzer with ASan and UBSan).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "train/options/npy_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using amlp::train::NpyError;
  using amlp::train::NpyHeader;
  try {
    const NpyHeader h = amlp::train::parse_npy_header(reinterpret_cast<const char*>(data), size, size, "fuzz.npy");
    const size_t row = static_cast<size_t>(h.cols()) * sizeof(float);
    if (h.data_offset + static_cast<size_t>(h.rows()) * row > size) __builtin_trap();  // the size check let it through
    std::vector<float> out(static_cast<size_t>(h.cols()));
    for (int64_t r = 0; r < h.rows(); ++r) std::memcpy(out.data(), data + h.data_offset + static_cast<size_t>(r) * row, row);
  } catch (const NpyError&) {
  }
  return 0;
}
