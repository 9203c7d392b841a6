// safetensors.cpp — the safetensors reader (safetensors.h).
#include "framework/nn/safetensors.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>

#include "framework/error.h"
#include "framework/json.h"
#include "framework/parse.h"
#include "framework/read_input.h"

namespace amlp {

namespace {

constexpr uint64_t kMaxHeaderBytes = uint64_t(100) << 20;  // the format's own cap

[[noreturn]] void fail(const std::string& path, const std::string& why) { throw Error(quote(path) + ": " + why); }

uint64_t le64(const unsigned char* b) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | b[i];
  return v;
}

// "(2, 3)", as framework/tensor.h shape_str writes a shape.
std::string dims_text(const std::vector<int64_t>& s) {
  std::string t = "(";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + (s.size() == 1 ? ",)" : ")");
}

}  // namespace

namespace {

// The header as JSON; a key given twice in one object is refused (a reader
// that kept the last would take another file than the writer meant). The
// format's header begins with '{' (no byte-order mark, space or NUL before
// it) and is padded after its object with spaces only.
Json parse_header(const std::string& path, const std::string& text) {
  if (text[0] != '{')
    fail(path, "not a safetensors file: its header begins with " + quote(text.substr(0, 4)) + ", not '{'");
  if (const size_t last = text.find_last_not_of(' '); text[last] != '}')
    fail(path, "not a safetensors file: its header ends with " + quote(text.substr(last, 4)) +
                   " after its JSON (padding is spaces only)");
  try {
    return Json::parse(text);
  } catch (const Json::parse_error& e) {
    if (!e.key_twice.empty()) fail(path, "not a safetensors file: its header gives the key " + quote(e.key_twice) + " twice");
    fail(path, "not a safetensors file: its header is not JSON");
  }
}

struct Entry {
  uint64_t begin, end;
  NamedValues v;
};

// One tensor's header entry, checked: F32, a shape of sizes, offsets that hold it.
Entry entry_of(const std::string& path, const std::string& name, const Json& e) {
  const std::string what = "tensor " + quote(name);
  if (!e.is_object() || !e.contains("dtype") || !e.contains("shape") || !e.contains("data_offsets"))
    fail(path, what + " lacks dtype, shape or data_offsets");
  if (!e["dtype"].is_string()) fail(path, what + ": dtype is not a string");
  if (e["dtype"] != "F32") fail(path, what + " is " + quote(e["dtype"].get<std::string>()) + "; only F32 (float32) is read");
  Entry out{0, 0, {}};
  out.v.name = name;
  uint64_t count = 1;
  if (!e["shape"].is_array()) fail(path, what + ": shape is not a list");
  for (const auto& d : e["shape"]) {
    if (!d.is_number_unsigned() || d.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
      fail(path, what + ": a dimension is not a non-negative integer");
    const uint64_t k = d.get<uint64_t>();
    if (k && count > std::numeric_limits<uint64_t>::max() / k) fail(path, what + ": its shape overflows");
    count *= k;
    out.v.shape.push_back(static_cast<int64_t>(k));
  }
  const auto& off = e["data_offsets"];
  if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
    fail(path, what + ": data_offsets is not two non-negative integers");
  out.begin = off[0].get<uint64_t>();
  out.end = off[1].get<uint64_t>();
  if (out.begin > out.end)
    fail(path, what + ": data_offsets [" + std::to_string(out.begin) + ", " + std::to_string(out.end) + ") run backwards");
  if (count > (out.end - out.begin) / 4 || out.end - out.begin != count * 4)
    fail(path, what + ": " + dims_text(out.v.shape) + " float32 values need " + std::to_string(count) +
                   " x 4 bytes, its offsets give " + std::to_string(out.end - out.begin));
  out.v.values.resize(count);
  return out;
}

}  // namespace

// The format's rules (as Hugging Face's reader enforces them): an 8-byte
// little-endian header length under its cap; a JSON object of tensors, each
// key once, and an optional "__metadata__" of strings to strings; the
// tensors' byte ranges, in offset order, tiling the data from 0 with no hole
// and no overlap; nothing after the last. Read once, whatever the file is.
std::vector<NamedValues> read_safetensors(const std::string& path, int wait_s) {
  std::string bytes;
  std::vector<Entry> entries;
  try {
    InputReader in(path, wait_s);  // a FIFO silent this long is an error, not a hang
    if (in.read(8, &bytes) < 8)
      fail(path, "not a safetensors file: " + std::to_string(bytes.size()) + " bytes, under the 8 of its header's length");
    const uint64_t n = le64(reinterpret_cast<const unsigned char*>(bytes.data()));
    const long long size = in.regular_size();
    if (n > kMaxHeaderBytes)
      fail(path, "not a safetensors file: a header of " + std::to_string(n) + " bytes, over the format's cap of " +
                     std::to_string(kMaxHeaderBytes) + " (100 MiB)");
    if (n < 2 || (size >= 0 && n > uint64_t(size) - 8))
      fail(path, "not a safetensors file: a header of " + std::to_string(n) + " bytes" +
                     (size >= 0 ? " in a file of " + std::to_string(size) : std::string()));
    bytes.clear();
    if (in.read(n, &bytes) < n)
      fail(path, "truncated: it ends " + std::to_string(bytes.size()) + " bytes into its header of " + std::to_string(n));
    const Json header = parse_header(path, bytes);
    if (!header.is_object()) fail(path, "not a safetensors file: its header is not a JSON object");
    // The tensors in the order of their names (each checked in that order).
    std::vector<const Json::Member*> members;
    for (const Json::Member& m : header.items()) members.push_back(&m);
    std::sort(members.begin(), members.end(), [](const Json::Member* a, const Json::Member* c) { return a->first < c->first; });
    for (const Json::Member* m : members) {
      const std::string& name = m->first;
      const Json& e = m->second;
      if (name != "__metadata__") {
        entries.push_back(entry_of(path, name, e));
        continue;
      }
      if (!e.is_object()) fail(path, "not a safetensors file: its __metadata__ is not an object");
      for (const auto& [k, v] : e.items())
        if (!v.is_string()) fail(path, "not a safetensors file: __metadata__ " + quote(k) + " is not a string");
    }
    std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& c) { return a.begin < c.begin; });
    uint64_t at = 0;  // where the next tensor's bytes must begin
    for (const Entry& t : entries) {
      if (t.begin != at)
        fail(path, "tensor " + quote(t.v.name) + ": data_offsets [" + std::to_string(t.begin) + ", " +
                       std::to_string(t.end) + ") " + (t.begin < at ? "overlap" : "leave a hole after") +
                       " the bytes before it, which end at " + std::to_string(at));
      at = t.end;
    }
    if (size >= 0 && at > uint64_t(size) - 8 - n)
      fail(path, "truncated: its tensors need " + std::to_string(at) + " bytes of data, the file holds " +
                     std::to_string(uint64_t(size) - 8 - n));
    bytes.clear();
    if (in.read(at, &bytes) < at)
      fail(path, "truncated: its tensors need " + std::to_string(at) + " bytes of data, it holds " +
                     std::to_string(bytes.size()));
    std::string more;
    if (in.read(1, &more) > 0)
      fail(path, "not a safetensors file: " +
                     (size >= 0 ? std::to_string(uint64_t(size) - 8 - n - at) + " bytes" : std::string("bytes")) +
                     " after its last tensor's data");
  } catch (const InputError& e) {
    fail(path, std::string("cannot read it: ") + e.what());
  }
  const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
  std::vector<NamedValues> r;
  for (Entry& t : entries) {
    for (size_t i = 0; i < t.v.values.size(); ++i) {
      const unsigned char* p = data + t.begin + 4 * i;
      const uint32_t bits = uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
      std::memcpy(&t.v.values[i], &bits, 4);
    }
    r.push_back(std::move(t.v));
  }
  return r;
}

}  // namespace amlp
