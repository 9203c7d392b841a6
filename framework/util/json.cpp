// Json (framework/json.h): the value type, and its parsing and printing
// through nlohmann-json, whose templates are instantiated here only.
#include "framework/json.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <ostream>
#include <unordered_set>

namespace amlp {

namespace {

// nlohmann's SAX events into a Json, refusing what its own parser would take
// silently (a key given twice: it keeps the last) and what would nest deeper
// than Json::kMaxDepth (every Json call on it would recurse that deep).
class Builder {
 public:
  explicit Builder(Json* root) : root_(root) {}

  bool null() { return put(Json()); }
  bool boolean(bool b) { return put(Json(b)); }
  bool number_integer(int64_t v) { return put(Json(v)); }
  bool number_unsigned(uint64_t v) { return put(Json(v)); }
  bool number_float(double v, const std::string&) { return put(Json(v)); }
  bool string(std::string& s) { return put(Json(std::move(s))); }
  bool binary(nlohmann::json::binary_t&) { return fail("binary values are not JSON"); }
  bool start_object(size_t) { return open(Json::object()); }
  bool key(std::string& k) {
    if (!keys_.back().insert(k).second) {  // a set per open object: a header of many keys stays linear
      key_twice_ = k;
      return fail("the key \"" + k + "\" is given twice in one object");
    }
    open_.back()->items().emplace_back(std::move(k), Json());
    return true;
  }
  bool end_object() { return close(); }
  bool start_array(size_t) { return open(Json::array()); }
  bool end_array() { return close(); }
  bool parse_error(size_t byte, const std::string&, const nlohmann::detail::exception& e) {
    byte_ = byte;
    why_ = e.what();
    return false;
  }

  Json::parse_error error() const { return Json::parse_error(why_, byte_, key_twice_); }

 private:
  // Where the next value goes: the root, an array's new element, or the
  // member the last key opened.
  Json* slot() {
    if (open_.empty()) return root_;
    Json* parent = open_.back();
    if (parent->is_array()) {
      parent->push_back(Json());
      return &parent->back();
    }
    return &parent->items().back().second;
  }
  bool put(Json v) {
    *slot() = std::move(v);
    return true;
  }
  bool open(Json v) {
    if (open_.size() >= size_t(Json::kMaxDepth))
      return fail("arrays and objects nested more than " + std::to_string(Json::kMaxDepth) + " deep");
    Json* s = slot();
    *s = std::move(v);
    open_.push_back(s);
    keys_.emplace_back();
    return true;
  }
  bool close() {
    open_.pop_back();
    keys_.pop_back();
    return true;
  }
  bool fail(std::string why) {
    why_ = std::move(why);
    return false;
  }

  Json* root_;
  std::vector<Json*> open_;  // the arrays and objects being filled, outermost first
  std::vector<std::unordered_set<std::string>> keys_;  // each one's keys so far (an array's: none)
  std::string why_, key_twice_;
  size_t byte_ = 0;
};

nlohmann::ordered_json to_nlohmann(const Json& j) {
  switch (j.type()) {
    case Json::Type::null: return nullptr;
    case Json::Type::boolean: return j.get<bool>();
    case Json::Type::integer: return j.get<int64_t>();
    case Json::Type::unsigned_integer: return j.get<uint64_t>();
    case Json::Type::number: return j.get<double>();
    case Json::Type::string: return j.get_ref();
    case Json::Type::array: {
      nlohmann::ordered_json out = nlohmann::ordered_json::array();
      for (const Json& e : j) out.push_back(to_nlohmann(e));
      return out;
    }
    case Json::Type::object: {
      nlohmann::ordered_json out = nlohmann::ordered_json::object();
      for (const auto& [k, v] : j.items()) out[k] = to_nlohmann(v);
      return out;
    }
  }
  return nullptr;
}

}  // namespace

Json::Json(std::initializer_list<Json> list) {
  const bool pairs = std::all_of(list.begin(), list.end(), [](const Json& e) {
    return e.is_array() && e.a_.size() == 2 && e.a_[0].is_string();
  });
  if (pairs && list.size() > 0) {
    type_ = Type::object;
    for (const Json& e : list) (*this)[e.a_[0].s_] = e.a_[1];
  } else {
    type_ = Type::array;
    a_.assign(list.begin(), list.end());
  }
}

Json Json::array(std::initializer_list<Json> list) {
  Json j;
  j.type_ = Type::array;
  j.a_.assign(list.begin(), list.end());
  return j;
}

Json Json::object() {
  Json j;
  j.type_ = Type::object;
  return j;
}

Json Json::parse(const std::string& text) {
  Json root;
  Builder b(&root);
  if (!nlohmann::json::sax_parse(text, &b)) throw b.error();
  return root;
}

const char* Json::type_name() const {
  switch (type_) {
    case Type::null: return "null";
    case Type::boolean: return "boolean";
    case Type::integer:
    case Type::unsigned_integer:
    case Type::number: return "number";
    case Type::string: return "string";
    case Type::array: return "array";
    case Type::object: return "object";
  }
  return "?";
}

size_t Json::size() const {
  switch (type_) {
    case Type::null: return 0;
    case Type::array: return a_.size();
    case Type::object: return o_.size();
    default: return 1;
  }
}

void Json::throw_type(const char* wanted) const {
  throw type_error(std::string("JSON: ") + wanted + " was wanted, this is " + (is_null() ? "null" : "a ") +
                   (is_null() ? "" : type_name()));
}

const Json::Array& Json::array_ref(const char* call) const {
  if (type_ != Type::array) throw type_error(std::string("JSON: ") + call + " needs an array, this is " + type_name());
  return a_;
}
Json::Array& Json::array_ref(const char* call) {
  return const_cast<Array&>(static_cast<const Json*>(this)->array_ref(call));
}
const Json::Object& Json::object_ref(const char* call) const {
  if (type_ != Type::object)
    throw type_error(std::string("JSON: ") + call + " needs an object, this is " + type_name());
  return o_;
}
Json::Object& Json::object_ref(const char* call) {
  return const_cast<Object&>(static_cast<const Json*>(this)->object_ref(call));
}

Json& Json::operator[](const std::string& key) {
  if (is_null()) type_ = Type::object;
  for (Member& m : object_ref("[key]"))
    if (m.first == key) return m.second;
  o_.emplace_back(key, Json());
  return o_.back().second;
}

const Json* Json::find(const std::string& key) const {
  if (type_ != Type::object) return nullptr;
  for (const Member& m : o_)
    if (m.first == key) return &m.second;
  return nullptr;
}

const Json& Json::at(const std::string& key) const {
  object_ref("at(key)");
  const Json* v = find(key);
  if (!v) throw out_of_range("JSON: no key \"" + key + "\"");
  return *v;
}
Json& Json::at(const std::string& key) { return const_cast<Json&>(static_cast<const Json*>(this)->at(key)); }

void Json::erase(const std::string& key) {
  Object& o = object_ref("erase");
  o.erase(std::remove_if(o.begin(), o.end(), [&](const Member& m) { return m.first == key; }), o.end());
}

const Json& Json::at(size_t i) const {
  const Array& a = array_ref("an index");
  if (i >= a.size())
    throw out_of_range("JSON: index " + std::to_string(i) + " of an array of " + std::to_string(a.size()));
  return a[i];
}
Json& Json::at(size_t i) { return const_cast<Json&>(static_cast<const Json*>(this)->at(i)); }

void Json::push_back(Json v) {
  if (is_null()) type_ = Type::array;
  array_ref("push_back").push_back(std::move(v));
}

const Json& Json::back() const {
  const Array& a = array_ref("back");
  if (a.empty()) throw out_of_range("JSON: back of an empty array");
  return a.back();
}
Json& Json::back() { return const_cast<Json&>(static_cast<const Json*>(this)->back()); }

const std::string& Json::get_ref() const {
  if (type_ != Type::string) throw_type("a string");
  return s_;
}

std::string Json::dump(int indent) const {
  return to_nlohmann(*this).dump(indent, ' ', /*ensure_ascii=*/false, nlohmann::ordered_json::error_handler_t::replace);
}

bool operator==(const Json& a, const Json& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_number_float() || b.is_number_float()) return a.get<double>() == b.get<double>();
    if (a.type_ == b.type_) return a.type_ == Json::Type::integer ? a.i_ == b.i_ : a.u_ == b.u_;
    const Json& s = a.type_ == Json::Type::integer ? a : b;  // the signed one
    const Json& u = a.type_ == Json::Type::integer ? b : a;
    return s.i_ >= 0 && uint64_t(s.i_) == u.u_;
  }
  if (a.type_ != b.type_) return false;
  switch (a.type_) {
    case Json::Type::null: return true;
    case Json::Type::boolean: return a.b_ == b.b_;
    case Json::Type::string: return a.s_ == b.s_;
    case Json::Type::array: return a.a_ == b.a_;
    case Json::Type::object:
      if (a.o_.size() != b.o_.size()) return false;
      for (const Json::Member& m : a.o_) {
        const Json* other = b.find(m.first);
        if (!other || !(*other == m.second)) return false;
      }
      return true;
    default: return false;
  }
}

std::ostream& operator<<(std::ostream& os, const Json& j) { return os << j.dump(); }

}  // namespace amlp
