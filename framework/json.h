// json.h — the JSON the programs write and read (the trace, the run summary,
// the safetensors header, the tests' reading of them): one value type, Json,
// whose objects keep their keys in the order they were given, with the calls
// of the nlohmann-json interface that the project uses. Parsing and printing
// are compiled once, in framework/util/json.cpp (the only file that includes
// nlohmann-json): its templates cost each file that instantiated them 5-18
// compiler-seconds (gcc -O0 to clang -O1 with ASan+UBSan), in every build.
//
//   Json run = {{"mode", "none"}, {"batches", 3}, {"losses", Json::array()}};
//   run["losses"].push_back(0.25);
//   std::string text = run.dump(2);               // {"mode": "none", ...}, as nlohmann's dump(2)
//   Json back = Json::parse(text);                // throws Json::parse_error (a key twice, too deep, ...)
//   back.at("batches").get<int>() == 3 && back.at("mode") == "none";
//
// Numbers are of three kinds, as in JSON's readers: an integer that is not
// negative reads as unsigned, a negative one as signed, anything with a
// fraction or exponent as a double; they compare equal by value across kinds.
// Objects compare equal whatever their keys' order.
#pragma once
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace amlp {

class Json {
 public:
  enum class Type { null, boolean, integer, unsigned_integer, number, string, array, object };
  using Member = std::pair<std::string, Json>;
  using Array = std::vector<Json>;
  using Object = std::vector<Member>;

  // Every error of this interface: what was wrong, in one line.
  struct error : std::runtime_error {
    using std::runtime_error::runtime_error;
  };
  struct parse_error : error {  // the text is not JSON (or nests deeper than kMaxDepth, or gives a key twice)
    parse_error(const std::string& what, size_t byte, std::string key_twice = "")
        : error(what), byte(byte), key_twice(std::move(key_twice)) {}
    size_t byte;            // where in the text
    std::string key_twice;  // when that is why: the key an object gives twice
  };
  struct type_error : error {  // a value of another kind than the call needs
    using error::error;
  };
  struct out_of_range : error {  // a key an object lacks, an index past an array's end
    using error::error;
  };
  static constexpr int kMaxDepth = 512;  // of arrays and objects within each other, in what parse takes

  Json() = default;
  Json(std::nullptr_t) {}
  Json(bool b) : type_(Type::boolean), b_(b) {}
  template <typename T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool> &&
                                             !std::is_same_v<T, char>, int> = 0>
  Json(T v) {
    if constexpr (std::is_signed_v<T>) {
      type_ = Type::integer;
      i_ = static_cast<int64_t>(v);
    } else {
      type_ = Type::unsigned_integer;
      u_ = static_cast<uint64_t>(v);
    }
  }
  template <typename T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
  Json(T v) : type_(Type::number), d_(static_cast<double>(v)) {}
  Json(const char* s) : type_(Type::string), s_(s) {}
  Json(std::string s) : type_(Type::string), s_(std::move(s)) {}
  template <typename T>
  Json(const std::vector<T>& v) : type_(Type::array) {
    a_.reserve(v.size());
    for (const T& x : v) a_.emplace_back(x);
  }
  // As nlohmann's: an object when every element is a pair whose first is a
  // string ({{"a", 1}, {"b", 2}}), else an array.
  Json(std::initializer_list<Json> list);

  static Json array(std::initializer_list<Json> list = {});
  static Json object();
  // The whole text as one JSON value (white space around it only).
  static Json parse(const std::string& text);

  Type type() const { return type_; }
  const char* type_name() const;
  bool is_null() const { return type_ == Type::null; }
  bool is_boolean() const { return type_ == Type::boolean; }
  bool is_number() const { return is_number_integer() || type_ == Type::number; }
  bool is_number_integer() const { return type_ == Type::integer || type_ == Type::unsigned_integer; }
  bool is_number_unsigned() const { return type_ == Type::unsigned_integer; }
  bool is_number_float() const { return type_ == Type::number; }
  bool is_string() const { return type_ == Type::string; }
  bool is_array() const { return type_ == Type::array; }
  bool is_object() const { return type_ == Type::object; }
  bool is_structured() const { return is_array() || is_object(); }

  // Elements of an array, members of an object; 0 for null, 1 for any other value.
  size_t size() const;
  bool empty() const { return size() == 0; }

  // Objects. operator[] on a null makes it an object and a missing key a null
  // member; const, and at(), throw out_of_range for a missing key.
  Json& operator[](const std::string& key);
  const Json& operator[](const std::string& key) const { return at(key); }
  Json& operator[](const char* key) { return (*this)[std::string(key)]; }
  const Json& operator[](const char* key) const { return at(std::string(key)); }
  Json& at(const std::string& key);
  const Json& at(const std::string& key) const;
  bool contains(const std::string& key) const { return find(key) != nullptr; }
  size_t count(const std::string& key) const { return contains(key) ? 1 : 0; }
  const Json* find(const std::string& key) const;  // null when absent (or not an object)
  template <typename T>
  T value(const std::string& key, const T& fallback) const {
    const Json* v = find(key);
    return v && !v->is_null() ? v->get<T>() : fallback;
  }
  std::string value(const std::string& key, const char* fallback) const { return value(key, std::string(fallback)); }
  const Object& items() const { return object_ref("items"); }
  Object& items() { return object_ref("items"); }
  void erase(const std::string& key);

  // Arrays: indexes, and iteration over the elements.
  template <typename I, std::enable_if_t<std::is_integral_v<I>, int> = 0>
  Json& operator[](I i) { return at(static_cast<size_t>(i)); }
  template <typename I, std::enable_if_t<std::is_integral_v<I>, int> = 0>
  const Json& operator[](I i) const { return at(static_cast<size_t>(i)); }
  Json& at(size_t i);
  const Json& at(size_t i) const;
  void push_back(Json v);  // a null becomes an array first
  template <typename... A>
  Json& emplace_back(A&&... a) {
    push_back(Json(std::forward<A>(a)...));
    return a_.back();
  }
  Json& front() { return at(size_t(0)); }
  const Json& front() const { return at(size_t(0)); }
  Json& back();
  const Json& back() const;
  Array::iterator begin() { return array_ref("begin").begin(); }
  Array::iterator end() { return array_ref("end").end(); }
  Array::const_iterator begin() const { return array_ref("begin").begin(); }
  Array::const_iterator end() const { return array_ref("end").end(); }

  // The value as T: bool, an arithmetic type (any number, converted as
  // static_cast does), std::string, or std::vector<T> of an array.
  template <typename T>
  T get() const {
    if constexpr (std::is_same_v<T, bool>) {
      if (type_ != Type::boolean) throw_type("a boolean");
      return b_;
    } else if constexpr (std::is_arithmetic_v<T>) {
      switch (type_) {
        case Type::integer: return static_cast<T>(i_);
        case Type::unsigned_integer: return static_cast<T>(u_);
        case Type::number: return static_cast<T>(d_);
        default: throw_type("a number");
      }
    } else if constexpr (std::is_same_v<T, std::string>) {
      if (type_ != Type::string) throw_type("a string");
      return s_;
    } else if constexpr (std::is_same_v<T, Json>) {
      return *this;
    } else {
      static_assert(is_vector<T>::value, "Json::get: bool, a number, std::string or std::vector");
      T out;
      for (const Json& e : array_ref("get")) out.push_back(e.get<typename T::value_type>());
      return out;
    }
  }
  const std::string& get_ref() const;  // a string's own text, not a copy

  // As nlohmann's dump(indent, ' ', false, replace): -1 compact, else pretty
  // with `indent` spaces; text that is not UTF-8 is written with U+FFFD.
  std::string dump(int indent = -1) const;

  friend bool operator==(const Json& a, const Json& b);
  friend bool operator!=(const Json& a, const Json& b) { return !(a == b); }
  friend std::ostream& operator<<(std::ostream& os, const Json& j);

 private:
  template <typename T>
  struct is_vector : std::false_type {};
  template <typename T>
  struct is_vector<std::vector<T>> : std::true_type {};
  [[noreturn]] void throw_type(const char* wanted) const;
  const Array& array_ref(const char* call) const;
  Array& array_ref(const char* call);
  const Object& object_ref(const char* call) const;
  Object& object_ref(const char* call);

  Type type_ = Type::null;
  union {
    bool b_;
    int64_t i_;
    uint64_t u_;
    double d_ = 0;
  };
  std::string s_;
  Array a_;
  Object o_;
};

}  // namespace amlp
