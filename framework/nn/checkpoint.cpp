// checkpoint.cpp — a network's parameters to and from safetensors (checkpoint.h; the reader: safetensors.cpp).
#include "framework/nn/checkpoint.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "framework/error.h"
#include "framework/json.h"
#include "framework/ops.h"
#include "framework/parse.h"
#include "framework/write_file.h"

namespace amlp {

namespace {

std::string shape_text(const Shape& s) { return shape_str(s); }

std::string number_text(float x) {
  char v[32];
  std::snprintf(v, sizeof v, "%g", static_cast<double>(x));
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
  // The header written as text, an entry per tensor in its order: linear in
  // the tensors (a Json object's insertion looks its keys up one by one).
  std::string h = R"({"__metadata__":{"format":"asyncmlp"})";
  std::string data;
  std::unordered_set<std::string> names;
  for (const auto& [name, t] : tensors)
    if (name == "__metadata__" || !names.insert(name).second)
      throw Error(quote(path) + " not written: the tensor name " + quote(name) + " is " +
                  (name == "__metadata__" ? "the format's own" : "given twice"));
  // The copies queued kAhead tensors ahead of the one read: a wait finds most
  // of them done, where a blocking read per tensor was a round trip to the
  // worker each (a model of 100,000 layers has 200,000 tensors); the staging
  // memory in flight stays that many tensors'.
  constexpr size_t kAhead = 256;
  std::vector<HostCopy> copies(tensors.size());
  for (size_t ti = 0; ti < std::min(kAhead, tensors.size()); ++ti) copies[ti] = tensors[ti].second.to_host_async();
  for (size_t ti = 0; ti < tensors.size(); ++ti) {
    if (ti + kAhead < tensors.size()) copies[ti + kAhead] = tensors[ti + kAhead].second.to_host_async();
    const auto& [name, t] = tensors[ti];
    HostCopy read = std::move(copies[ti]);  // its staging memory goes with the iteration
    const std::vector<float>& v = read.get();
    // The reader refuses a value that is not finite (parameters_problem): such a file is never written.
    if (const auto bad = std::find_if(v.begin(), v.end(), [](float x) { return !std::isfinite(x); }); bad != v.end())
      throw Error(quote(path) + " not written: tensor " + quote(name) + " holds " + number_text(*bad) + " (value " +
                  std::to_string(bad - v.begin()) + " of " + std::to_string(v.size()) + "): a parameter must be finite");
    const size_t begin = data.size();
    data.resize(begin + v.size() * sizeof(float));
    for (size_t i = 0; i < v.size(); ++i) {  // little-endian whatever the host
      uint32_t bits;
      std::memcpy(&bits, &v[i], 4);
      for (int k = 0; k < 4; ++k) data[begin + 4 * i + k] = static_cast<char>((bits >> (8 * k)) & 0xff);
    }
    h += "," + Json(name).dump() + R"(:{"dtype":"F32","shape":)" + Json(t.shape()).dump() + R"(,"data_offsets":[)" +
         std::to_string(begin) + "," + std::to_string(data.size()) + "]}";
  }
  h += "}";
  h.append((8 - h.size() % 8) % 8, ' ');  // the data starts 8-byte aligned (the format allows trailing spaces)
  std::string file;
  append_le64(file, h.size());
  file += h;
  file += data;
  write_file(path, file);
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

std::string parameters_problem(const std::string& path, const std::vector<NamedValues>& got,
                               const std::vector<std::pair<std::string, Shape>>& want) {
  // By name, once each: linear in the tensors (a model of 100,000 layers has 200,000).
  std::unordered_map<std::string_view, const NamedValues*> by_name;
  for (const NamedValues& v : got) by_name.emplace(v.name, &v);
  std::unordered_set<std::string_view> wanted_names;
  for (const auto& wanted : want) {
    const std::string& name = wanted.first;
    const auto& shape = wanted.second;
    wanted_names.insert(name);
    const auto found = by_name.find(name);
    const NamedValues* it = found == by_name.end() ? nullptr : found->second;
    if (!it) return quote(path) + " has no tensor " + quote(name) + " (the model's is " + shape_text(shape) + ")";
    if (it->shape != shape)
      return quote(path) + ": tensor " + quote(name) + " is " + shape_text(it->shape) + " in the file, " +
             shape_text(shape) + " in the model";
    const auto bad = std::find_if(it->values.begin(), it->values.end(), [](float x) { return !std::isfinite(x); });
    if (bad != it->values.end()) {
      return quote(path) + ": tensor " + quote(name) + " holds " + number_text(*bad) + " (value " +
             std::to_string(bad - it->values.begin()) + " of " + std::to_string(it->values.size()) +
             "): a parameter must be finite";
    }
  }
  for (const NamedValues& v : got)
    if (!wanted_names.count(v.name))
      return quote(path) + ": tensor " + quote(v.name) + " " + shape_text(v.shape) + " is not one of the model's";
  return "";
}

std::string parameters_problem(const std::string& path, const std::vector<std::pair<std::string, Shape>>& want) {
  try {
    return parameters_problem(path, read_safetensors(path), want);
  } catch (const Error& e) {
    return e.what();
  }
}

void load_parameters(const std::string& path, const std::vector<NamedValues>& got, Sequential& net) {
  const auto ps = named_parameters(net);
  std::vector<std::pair<std::string, Shape>> want;
  for (const auto& [name, p] : ps) want.emplace_back(name, p->value.shape());
  if (const std::string why = parameters_problem(path, got, want); !why.empty()) throw ShapeError(why);
  std::unordered_map<std::string_view, const NamedValues*> by_name;
  for (const NamedValues& v : got) by_name.emplace(v.name, &v);
  NoGradGuard ng;
  for (const auto& [name, p] : ps) {
    const NamedValues& v = *by_name.at(name);  // parameters_problem found each
    Tensor src = from_host(v.shape, v.values.data(), p->value.device());
    copy_(p->value, src);
  }
}

void load_parameters(const std::string& path, Sequential& net) { load_parameters(path, read_safetensors(path), net); }

}  // namespace amlp
