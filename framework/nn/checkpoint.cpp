// checkpoint.cpp — a network's parameters to and from safetensors (checkpoint.h; the reader: safetensors.cpp).
#include "framework/nn/checkpoint.h"

#include <algorithm>
#include <atomic>
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

namespace {

// Tensors read or written together (checkpoint.h: ChunkLimits).
std::atomic<size_t> g_chunk_bytes{ChunkLimits{}.bytes}, g_chunk_tensors{ChunkLimits{}.tensors};
struct Chunk {
  size_t begin, end;  // tensors [begin, end)
};
template <class TensorOf>
std::vector<Chunk> chunks_of(size_t n, TensorOf tensor) {
  const ChunkLimits limit = checkpoint_chunk_limits();
  std::vector<Chunk> out;
  size_t bytes = 0;
  for (size_t i = 0; i < n; ++i) {
    const Tensor& t = tensor(i);
    const bool alone = t.nbytes() >= limit.bytes;
    if (out.empty() || alone || bytes + t.nbytes() > limit.bytes || out.back().end - out.back().begin >= limit.tensors ||
        tensor(out.back().begin).device() != t.device() || tensor(out.back().begin).nbytes() >= limit.bytes) {
      out.push_back({i, i + 1});
      bytes = t.nbytes();
    } else {
      out.back().end = i + 1;
      bytes += t.nbytes();
    }
  }
  return out;
}

void append_shape(std::string& h, const Shape& s) {
  h += '[';
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) h += ',';
    h += std::to_string(s[i]);
  }
  h += ']';
}

}  // namespace

ChunkLimits checkpoint_chunk_limits() { return {g_chunk_bytes.load(), g_chunk_tensors.load()}; }

void set_checkpoint_chunk_limits(ChunkLimits limits) {
  if (limits.bytes == 0 || limits.tensors == 0)
    throw Error("set_checkpoint_chunk_limits: each limit must be at least 1 (got " + std::to_string(limits.bytes) +
                " bytes, " + std::to_string(limits.tensors) + " tensors)");
  g_chunk_bytes = limits.bytes;
  g_chunk_tensors = limits.tensors;
}

void save_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors) {
  // The header written as text, an entry per tensor in its order: linear in
  // the tensors (a Json object's insertion looks its keys up one by one).
  std::string h = R"({"__metadata__":{"format":"asyncmlp"})";
  std::string data;
  std::unordered_set<std::string> names;
  names.reserve(tensors.size());
  for (const auto& [name, t] : tensors)
    if (name == "__metadata__" || !names.insert(name).second)
      throw Error(quote(path) + " not written: the tensor name " + quote(name) + " is " +
                  (name == "__metadata__" ? "the format's own" : "given twice"));
  // Each chunk's values come back by one host copy, queued kAhead chunks
  // ahead of the one read: a wait finds most of them done, and the staging
  // memory in flight stays that many chunks'.
  const std::vector<Chunk> chunks = chunks_of(tensors.size(), [&](size_t i) -> const Tensor& { return tensors[i].second; });
  constexpr size_t kAhead = 2;
  std::vector<HostCopy> copies(chunks.size());
  auto start = [&](size_t ci) {
    const Chunk& ch = chunks[ci];
    if (ch.end - ch.begin == 1) {
      copies[ci] = tensors[ch.begin].second.to_host_async();
      return;
    }
    std::vector<Tensor> group;
    group.reserve(ch.end - ch.begin);
    for (size_t i = ch.begin; i < ch.end; ++i) group.push_back(tensors[i].second);
    copies[ci] = pack(group).to_host_async();
  };
  for (size_t ci = 0; ci < std::min(kAhead, chunks.size()); ++ci) start(ci);
  for (size_t ci = 0; ci < chunks.size(); ++ci) {
    if (ci + kAhead < chunks.size()) start(ci + kAhead);
    HostCopy read = std::move(copies[ci]);  // its staging memory goes with the iteration
    const std::vector<float>& values = read.get();
    size_t at = 0;
    for (size_t ti = chunks[ci].begin; ti < chunks[ci].end; ++ti) {
      const auto& [name, t] = tensors[ti];
      const float* v = values.data() + at;
      const size_t n = static_cast<size_t>(t.numel());
      at += n;
      // The reader refuses a value that is not finite (parameters_problem): such a file is never written.
      if (const float* bad = std::find_if(v, v + n, [](float x) { return !std::isfinite(x); }); bad != v + n)
        throw Error(quote(path) + " not written: tensor " + quote(name) + " holds " + number_text(*bad) + " (value " +
                    std::to_string(bad - v) + " of " + std::to_string(n) + "): a parameter must be finite");
      const size_t begin = data.size();
      data.resize(begin + n * sizeof(float));
      for (size_t i = 0; i < n; ++i) {  // little-endian whatever the host
        uint32_t bits;
        std::memcpy(&bits, &v[i], 4);
        for (int k = 0; k < 4; ++k) data[begin + 4 * i + k] = static_cast<char>((bits >> (8 * k)) & 0xff);
      }
      h += ',';
      h += Json(name).dump();
      h += R"(:{"dtype":"F32","shape":)";
      append_shape(h, t.shape());
      h += R"(,"data_offsets":[)";
      h += std::to_string(begin);
      h += ',';
      h += std::to_string(data.size());
      h += "]}";
    }
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
  // By name, once each: linear in the tensors (a model of 100,000 layers has
  // 200,000). A file in the model's order (as save_parameters writes it) is
  // matched position by position, with no map.
  const bool in_order = got.size() == want.size() && std::equal(got.begin(), got.end(), want.begin(),
      [](const NamedValues& g, const std::pair<std::string, Shape>& w) { return g.name == w.first; });
  std::unordered_map<std::string_view, const NamedValues*> by_name;
  std::unordered_set<std::string_view> wanted_names;
  if (!in_order) {
    by_name.reserve(got.size());
    for (const NamedValues& v : got) by_name.emplace(v.name, &v);
    wanted_names.reserve(want.size());
  }
  for (size_t wi = 0; wi < want.size(); ++wi) {
    const std::string& name = want[wi].first;
    const auto& shape = want[wi].second;
    const NamedValues* it = nullptr;
    if (in_order) {
      it = &got[wi];
    } else {
      wanted_names.insert(name);
      const auto found = by_name.find(name);
      it = found == by_name.end() ? nullptr : found->second;
    }
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
  if (!in_order)
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
  // The file's tensor for each parameter: at its position when the file is in
  // the model's order, else by name (parameters_problem found each).
  const bool in_order = std::equal(got.begin(), got.end(), ps.begin(), ps.end(),
                                   [](const NamedValues& g, const auto& p) { return g.name == p.first; });
  std::unordered_map<std::string_view, const NamedValues*> by_name;
  if (!in_order) {
    by_name.reserve(got.size());
    for (const NamedValues& v : got) by_name.emplace(v.name, &v);
  }
  auto values_of = [&](size_t i) -> const NamedValues& { return in_order ? got[i] : *by_name.at(ps[i].first); };
  NoGradGuard ng;
  // A chunk of parameters at a time (chunks_of): its values gathered here,
  // queued by one from_host and spread by one unpack_.
  std::vector<float> staged;
  for (const Chunk& ch : chunks_of(ps.size(), [&](size_t i) -> const Tensor& { return ps[i].second->value; })) {
    if (ch.end - ch.begin == 1) {
      Parameter& p = *ps[ch.begin].second;
      const NamedValues& v = values_of(ch.begin);
      copy_(p.value, from_host(v.shape, v.values.data(), p.value.device()));
      continue;
    }
    staged.clear();
    std::vector<Tensor> group;
    group.reserve(ch.end - ch.begin);
    for (size_t i = ch.begin; i < ch.end; ++i) {
      const NamedValues& v = values_of(i);
      staged.insert(staged.end(), v.values.begin(), v.values.end());
      group.push_back(ps[i].second->value);
    }
    unpack_(group, from_host({static_cast<int64_t>(staged.size())}, staged.data(), group.front().device()));
  }
}

void load_parameters(const std::string& path, Sequential& net) { load_parameters(path, read_safetensors(path), net); }

}  // namespace amlp
