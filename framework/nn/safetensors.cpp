// safetensors.cpp — the safetensors reader (safetensors.h).
#include "framework/nn/safetensors.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>

#include <unordered_set>

#include <nlohmann/json.hpp>

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

struct Entry {
  uint64_t begin, end;
  NamedValues v;  // its values filled once the data is read (what the file holds, not what it declares)
  uint64_t count;
};

// The header read as it is parsed (nlohmann's SAX events), into the tensors'
// entries and nothing more: its memory is the entries' (a tensor's name and
// shape, bounded by the text that gives them), not a tree of every JSON value
// (a value cost 80 times its text, and a 98 MiB header of one large
// __metadata__ array ended in std::bad_alloc). The format's rules as the
// tree was checked: an object of tensors, each key once; a tensor an object
// with an F32 dtype, a shape of sizes and two data_offsets that hold it (other
// keys skipped); an optional __metadata__ of strings to strings.
// An open object's keys so far, to refuse one given twice: a few in a list (a
// tensor's dtype, shape and data_offsets: no hashing, no node per key), a set
// once there are more (the header's tensors, 200,000 in a model of 100,000 layers).
class ObjectKeys {
 public:
  // False when `k` was given before.
  bool insert(const std::string& k) {
    if (!many_.empty()) return many_.insert(k).second;
    if (std::find(few_.begin(), few_.end(), k) != few_.end()) return false;
    few_.push_back(k);
    if (few_.size() > kFew) {
      many_.reserve(4 * kFew);
      for (std::string& f : few_) many_.insert(std::move(f));
      few_.clear();
    }
    return true;
  }

 private:
  static constexpr size_t kFew = 8;
  std::vector<std::string> few_;
  std::unordered_set<std::string> many_;
};

class HeaderReader {
 public:
  std::vector<Entry> entries;
  std::string why;  // the first problem, once parsing stopped

  bool null() { return scalar("null"); }
  bool boolean(bool) { return scalar("a boolean"); }
  bool number_integer(int64_t v) { return v < 0 ? scalar("a negative number") : number(uint64_t(v)); }
  bool number_unsigned(uint64_t v) { return number(v); }
  bool number_float(double, const std::string&) { return scalar("a fraction"); }
  bool binary(nlohmann::json::binary_t&) { return fail("its header is not JSON"); }
  bool string(std::string& v) {
    if (skipping_) return true;
    if (depth_ == 2 && in_metadata_) return true;  // a metadata value: a string, as it must be
    if (depth_ == 2 && field_ == "dtype") {
      if (v != "F32") return fail(what() + " is " + quote(v) + "; only F32 (float32) is read");
      has_dtype_ = true;
      return true;
    }
    return scalar("a string");
  }
  bool start_object(size_t) { return open(true); }
  bool start_array(size_t) { return open(false); }
  bool end_array() { return close(); }
  bool end_object() {
    if (!skipping_ && depth_ == 2 && !in_metadata_ && !end_tensor()) return false;
    return close();
  }
  bool key(std::string& k) {
    if (!keys_.back().insert(k)) {  // a key twice: a reader that kept the last would take another file
      return fail("not a safetensors file: its header gives the key " + quote(k) + " twice");
    }
    if (skipping_) return true;
    if (depth_ == 1) {
      name_ = k;
      in_metadata_ = k == "__metadata__";
    } else if (depth_ == 2) {
      field_ = k;
    }
    return true;
  }
  bool parse_error(size_t, const std::string&, const nlohmann::detail::exception&) {
    if (why.empty()) why = "not a safetensors file: its header is not JSON";
    return false;
  }

 private:
  std::string what() const { return "tensor " + quote(name_); }
  bool fail(std::string w) {
    why = std::move(w);
    return false;
  }
  // A scalar where the format wants something else (a skipped value is anything).
  bool scalar(const char*) {
    if (skipping_) return true;
    if (depth_ == 0) return fail("not a safetensors file: its header is not a JSON object");
    if (depth_ == 1 && in_metadata_) return fail("not a safetensors file: its __metadata__ is not an object");
    if (depth_ == 1) return fail(what() + " lacks dtype, shape or data_offsets");
    if (depth_ == 2 && in_metadata_) return fail("not a safetensors file: __metadata__ " + quote(field_) + " is not a string");
    if (depth_ == 2 && field_ == "dtype") return fail(what() + ": dtype is not a string");
    if (depth_ == 2 && field_ == "shape") return fail(what() + ": shape is not a list");
    if (depth_ == 2 && field_ == "data_offsets") return fail(what() + ": data_offsets is not two non-negative integers");
    if (depth_ == 2) return true;  // another key's value: not the format's
    if (field_ == "shape") return fail(what() + ": a dimension is not a non-negative integer");
    return fail(what() + ": data_offsets is not two non-negative integers");
  }
  bool number(uint64_t v) {
    if (skipping_ || depth_ != 3) return scalar("a number");
    if (field_ == "shape") {
      if (v > uint64_t(std::numeric_limits<int64_t>::max())) return fail(what() + ": a dimension is not a non-negative integer");
      shape_.push_back(static_cast<int64_t>(v));
      return true;
    }
    if (offsets_.size() == 2) return fail(what() + ": data_offsets is not two non-negative integers");
    offsets_.push_back(v);
    return true;
  }
  bool open(bool object) {
    if (depth_ + skipping_ >= Json::kMaxDepth)
      return fail("not a safetensors file: its header nests more than " + std::to_string(Json::kMaxDepth) + " deep");
    keys_.emplace_back();
    if (skipping_) return ++skipping_, true;
    if (depth_ == 0 && !object) return fail("not a safetensors file: its header is not a JSON object");
    if (depth_ == 1 && in_metadata_ && !object) return fail("not a safetensors file: its __metadata__ is not an object");
    if (depth_ == 1 && !in_metadata_) {
      if (!object) return fail(what() + " lacks dtype, shape or data_offsets");
      has_dtype_ = has_shape_ = has_offsets_ = false;
      shape_.clear();
      offsets_.clear();
    }
    if (depth_ == 2 && in_metadata_) return fail("not a safetensors file: __metadata__ " + quote(field_) + " is not a string");
    if (depth_ == 2) {
      if (field_ == "dtype") return fail(what() + ": dtype is not a string");
      const bool shape = field_ == "shape", offsets = field_ == "data_offsets";
      if (shape && object) return fail(what() + ": shape is not a list");
      if (offsets && object) return fail(what() + ": data_offsets is not two non-negative integers");
      if (!shape && !offsets) return ++skipping_, true;  // another key's value: skipped, whatever it holds
      (shape ? has_shape_ : has_offsets_) = true;
    }
    if (depth_ == 3) return fail(what() + (field_ == "shape" ? ": a dimension is not a non-negative integer"
                                                             : ": data_offsets is not two non-negative integers"));
    ++depth_;
    return true;
  }
  bool close() {
    keys_.pop_back();
    if (skipping_) return --skipping_, true;
    --depth_;
    return true;
  }
  // A tensor's object ended: its entry, checked.
  bool end_tensor() {
    if (!has_dtype_ || !has_shape_ || !has_offsets_) return fail(what() + " lacks dtype, shape or data_offsets");
    if (offsets_.size() != 2) return fail(what() + ": data_offsets is not two non-negative integers");
    Entry e{offsets_[0], offsets_[1], {}, 1};
    for (int64_t k : shape_) {
      if (k && e.count > std::numeric_limits<uint64_t>::max() / uint64_t(k)) return fail(what() + ": its shape overflows");
      e.count *= uint64_t(k);
    }
    if (e.begin > e.end)
      return fail(what() + ": data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) + ") run backwards");
    if (e.count > (e.end - e.begin) / 4 || e.end - e.begin != e.count * 4)
      return fail(what() + ": " + dims_text(shape_) + " float32 values need " + std::to_string(e.count) +
                  " x 4 bytes, its offsets give " + std::to_string(e.end - e.begin));
    e.v.name = name_;
    e.v.shape = shape_;
    entries.push_back(std::move(e));
    return true;
  }

  int depth_ = 0;        // 1: in the header's object; 2: in a tensor's (or __metadata__); 3: in its shape or offsets
  int skipping_ = 0;     // how deep inside a value that is skipped
  bool in_metadata_ = false;
  std::string name_, field_;  // the tensor (or __metadata__) and its key being read
  bool has_dtype_ = false, has_shape_ = false, has_offsets_ = false;
  std::vector<int64_t> shape_;
  std::vector<uint64_t> offsets_;
  std::vector<ObjectKeys> keys_;  // each open object's keys so far
};

// The header's tensors; a problem is an Error naming the file. The format's
// header begins with '{' (no byte-order mark, space or NUL before it) and is
// padded after its object with spaces only.
std::vector<Entry> parse_header(const std::string& path, const std::string& text) {
  if (text[0] != '{')
    fail(path, "not a safetensors file: its header begins with " + quote(text.substr(0, 4)) + ", not '{'");
  if (const size_t last = text.find_last_not_of(' '); text[last] != '}')
    fail(path, "not a safetensors file: its header ends with " + quote(text.substr(last, 4)) +
                   " after its JSON (padding is spaces only)");
  HeaderReader r;
  if (!nlohmann::json::sax_parse(text, &r)) fail(path, r.why.empty() ? "not a safetensors file: its header is not JSON" : r.why);
  return std::move(r.entries);
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
    entries = parse_header(path, bytes);
    // Checked in the order of their names, then of their offsets (ties keep the names' order).
    std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& c) { return a.v.name < c.v.name; });
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
    t.v.values.resize(t.count);  // the bytes are read: what the file holds, no more
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
