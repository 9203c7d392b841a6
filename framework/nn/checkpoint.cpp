// checkpoint.cpp — safetensors reading and writing (checkpoint.h).
#include "framework/nn/checkpoint.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "framework/error.h"
#include "framework/ops.h"
#include "framework/parse.h"
#include "framework/write_file.h"

namespace amlp {

namespace {

constexpr uint64_t kMaxHeaderBytes = uint64_t(100) << 20;  // the format's own cap

std::string shape_text(const Shape& s) { return shape_str(s); }

[[noreturn]] void fail(const std::string& path, const std::string& why) { throw Error(quote(path) + ": " + why); }

uint64_t le64(const unsigned char* b) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | b[i];
  return v;
}

void append_le64(std::string& s, uint64_t v) {
  for (int i = 0; i < 8; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// The layer's kind as a name: "Dense(2048, relu)" → "dense".
std::string kind_of(const Block& b) {
  std::string d = b.describe(), k;
  for (char c : d) {
    if (!std::isalnum(static_cast<unsigned char>(c))) break;
    k.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  return k.empty() ? "layer" : k;
}

}  // namespace

void save_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  header["__metadata__"] = {{"format", "asyncmlp"}};
  std::string data;
  for (const auto& [name, t] : tensors) {
    const std::vector<float> v = t.to_host();
    const size_t begin = data.size();
    data.resize(begin + v.size() * sizeof(float));
    for (size_t i = 0; i < v.size(); ++i) {  // little-endian whatever the host
      uint32_t bits;
      std::memcpy(&bits, &v[i], 4);
      for (int k = 0; k < 4; ++k) data[begin + 4 * i + k] = static_cast<char>((bits >> (8 * k)) & 0xff);
    }
    header[name] = {{"dtype", "F32"}, {"shape", t.shape()}, {"data_offsets", {begin, data.size()}}};
  }
  std::string h = header.dump();
  h.append((8 - h.size() % 8) % 8, ' ');  // the data starts 8-byte aligned (the format allows trailing spaces)
  std::string file;
  append_le64(file, h.size());
  file += h;
  file += data;
  write_file(path, file);
}

std::vector<NamedValues> read_safetensors(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, std::string("cannot read: ") + std::strerror(errno));
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) fail(path, "cannot read: an I/O error");
  const auto* b = reinterpret_cast<const unsigned char*>(bytes.data());
  if (bytes.size() < 8) fail(path, "not a safetensors file: " + std::to_string(bytes.size()) + " bytes, under the 8 of its header's length");
  const uint64_t n = le64(b);
  if (n < 2 || n > kMaxHeaderBytes || n > bytes.size() - 8)
    fail(path, "not a safetensors file: a header of " + std::to_string(n) + " bytes in a file of " +
                   std::to_string(bytes.size()));
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(bytes.begin() + 8, bytes.begin() + 8 + static_cast<std::ptrdiff_t>(n));
  } catch (const nlohmann::json::exception&) {
    fail(path, "not a safetensors file: its header is not JSON");
  }
  if (!header.is_object()) fail(path, "not a safetensors file: its header is not a JSON object");
  const uint64_t data_bytes = bytes.size() - 8 - n;
  const unsigned char* data = b + 8 + n;
  std::vector<std::pair<uint64_t, NamedValues>> out;
  for (const auto& [name, e] : header.items()) {
    if (name == "__metadata__") continue;
    const std::string what = "tensor " + quote(name);
    if (!e.is_object() || !e.contains("dtype") || !e.contains("shape") || !e.contains("data_offsets"))
      fail(path, what + " lacks dtype, shape or data_offsets");
    if (!e["dtype"].is_string()) fail(path, what + ": dtype is not a string");
    if (e["dtype"] != "F32")
      fail(path, what + " is " + e["dtype"].get<std::string>() + "; only F32 (float32) is read");
    NamedValues v;
    v.name = name;
    uint64_t count = 1;
    if (!e["shape"].is_array()) fail(path, what + ": shape is not a list");
    for (const auto& d : e["shape"]) {
      if (!d.is_number_unsigned() || d.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
        fail(path, what + ": a dimension is not a non-negative integer");
      const uint64_t k = d.get<uint64_t>();
      if (k && count > std::numeric_limits<uint64_t>::max() / k) fail(path, what + ": its shape overflows");
      count *= k;
      v.shape.push_back(static_cast<int64_t>(k));
    }
    const auto& off = e["data_offsets"];
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
      fail(path, what + ": data_offsets is not two non-negative integers");
    const uint64_t begin = off[0].get<uint64_t>(), end = off[1].get<uint64_t>();
    if (begin > end || end > data_bytes)
      fail(path, what + ": data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                     ") outside the file's " + std::to_string(data_bytes) + " data bytes (truncated?)");
    if (count > (end - begin) / 4 || end - begin != count * 4)
      fail(path, what + ": " + shape_text(v.shape) + " float32 values need " + std::to_string(count) +
                     " x 4 bytes, its offsets give " + std::to_string(end - begin));
    v.values.resize(count);
    for (uint64_t i = 0; i < count; ++i) {
      const unsigned char* p = data + begin + 4 * i;
      const uint32_t bits = uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
      std::memcpy(&v.values[i], &bits, 4);
    }
    out.emplace_back(begin, std::move(v));
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& c) { return a.first < c.first; });
  std::vector<NamedValues> r;
  for (auto& [_, v] : out) r.push_back(std::move(v));
  return r;
}

std::vector<std::pair<std::string, Parameter*>> named_parameters(Sequential& net) {
  std::vector<std::pair<std::string, Parameter*>> ps;
  for (size_t i = 0; i < net.size(); ++i)
    for (Parameter* p : net[i].parameters()) ps.emplace_back(kind_of(net[i]) + std::to_string(i) + "." + p->name, p);
  return ps;
}

void save_parameters(const std::string& path, Sequential& net) {
  std::vector<std::pair<std::string, Tensor>> ts;
  for (auto& [name, p] : named_parameters(net)) ts.emplace_back(name, p->value);
  if (ts.empty()) throw Error(quote(path) + ": the network has no parameters yet (initialised at its first forward)");
  save_safetensors(path, ts);
}

std::string parameters_problem(const std::string& path, const std::vector<std::pair<std::string, Shape>>& want) {
  std::vector<NamedValues> got;
  try {
    got = read_safetensors(path);
  } catch (const Error& e) {
    return e.what();
  }
  for (const auto& wanted : want) {
    const std::string& name = wanted.first;
    const auto& shape = wanted.second;
    auto it = std::find_if(got.begin(), got.end(), [&](const NamedValues& v) { return v.name == name; });
    if (it == got.end()) return quote(path) + " has no tensor " + quote(name) + " (the model's is " + shape_text(shape) + ")";
    if (it->shape != shape)
      return quote(path) + ": tensor " + quote(name) + " is " + shape_text(it->shape) + " in the file, " +
             shape_text(shape) + " in the model";
  }
  for (const NamedValues& v : got)
    if (std::none_of(want.begin(), want.end(), [&](const auto& w) { return w.first == v.name; }))
      return quote(path) + ": tensor " + quote(v.name) + " " + shape_text(v.shape) + " is not one of the model's";
  return "";
}

void load_parameters(const std::string& path, Sequential& net) {
  const auto ps = named_parameters(net);
  std::vector<std::pair<std::string, Shape>> want;
  for (const auto& [name, p] : ps) want.emplace_back(name, p->value.shape());
  if (const std::string why = parameters_problem(path, want); !why.empty()) throw ShapeError(why);
  const std::vector<NamedValues> got = read_safetensors(path);
  NoGradGuard ng;
  for (const auto& [name, p] : ps)
    for (const NamedValues& v : got)
      if (v.name == name) {
        Tensor src = from_host(v.shape, v.values.data(), p->value.device());
        copy_(p->value, src);
      }
}

}  // namespace amlp
