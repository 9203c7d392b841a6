// Covers framework/nn/checkpoint.cpp.
// A network's parameters through a safetensors file: the bytes as the format
// lays them out, a round trip bitwise, and one clear error for every file it
// cannot take (truncated, not safetensors, another dtype, tensors or shapes
// that do not match the model).
#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include "framework/json.h"

#include "framework/nn/checkpoint.h"
#include "models/mlp.h"
#include "test_util.h"
#include "train/train_test_util.h"  // ScratchDir

namespace amlp::testing {
namespace {

class Checkpoint : public DeviceTest {
 protected:
  std::unique_ptr<Sequential> net(uint64_t seed, const models::LayerSpec& spec = models::LayerSpec{{5, 4}}) {
    manual_seed(seed);
    auto n = models::make_mlp(spec, 1);
    NoGradGuard ng;
    n->forward(zeros({1, 3}, dev()));  // initialises: dense0 (5,3), dense1 (4,5), dense2 (1,4)
    return n;
  }
  static std::string slurp(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  static void spit(const std::string& p, const std::string& bytes) { std::ofstream(p, std::ios::binary) << bytes; }
  // A file as the format lays it out: the header's length (8 bytes, little
  // endian), the JSON header, the data.
  static std::string file_of(const std::string& header, const std::string& data) {
    std::string f;
    for (int i = 0; i < 8; ++i) f.push_back(static_cast<char>((header.size() >> (8 * i)) & 0xff));
    return f + header + data;
  }
  std::string error_of(const std::string& path) {
    try {
      auto n = net(1);
      load_parameters(path, *n);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }
};

TEST_P(Checkpoint, TheFileIsSafetensorsNamedByLayerAndRole) {
  ScratchDir dir;
  auto n = net(1);
  save_parameters(dir.file("p.safetensors"), *n);
  const std::string f = slurp(dir.file("p.safetensors"));
  ASSERT_GE(f.size(), 8u);
  uint64_t len = 0;
  for (int i = 7; i >= 0; --i) len = (len << 8) | static_cast<unsigned char>(f[i]);
  EXPECT_EQ((8 + len) % 8, 0u) << "the data starts 8-byte aligned";
  const auto h = parse_json(f.substr(8, len));
  std::vector<std::string> names;
  for (const auto& [k, v] : h.items())
    if (k != "__metadata__") names.push_back(k);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"dense0.bias", "dense0.weight", "dense1.bias", "dense1.weight",
                                             "dense2.bias", "dense2.weight"}));
  EXPECT_EQ(h["dense1.weight"]["dtype"], "F32");
  EXPECT_EQ(h["dense1.weight"]["shape"], amlp::Json::array({4, 5}));
  const auto off = h["dense1.weight"]["data_offsets"];
  EXPECT_EQ(off[1].get<uint64_t>() - off[0].get<uint64_t>(), 4u * 5 * 4);
  // The values little-endian at their offsets: dense1.weight's first is the parameter's.
  const std::vector<float> w = named_parameters(*n)[2].second->value.to_host();
  float first;
  const size_t at = 8 + len + off[0].get<uint64_t>();
  const uint32_t bits = uint32_t(uint8_t(f[at])) | uint32_t(uint8_t(f[at + 1])) << 8 | uint32_t(uint8_t(f[at + 2])) << 16 |
                        uint32_t(uint8_t(f[at + 3])) << 24;
  std::memcpy(&first, &bits, 4);
  EXPECT_EQ(first, w[0]);
  EXPECT_EQ(f.size(), 8 + len + (5 * 3 + 5 + 4 * 5 + 4 + 1 * 4 + 1) * 4u);
}

TEST_P(Checkpoint, ARoundTripGivesTheSameParametersBitwise) {
  ScratchDir dir;
  auto a = net(1), b = net(2);
  save_parameters(dir.file("a.safetensors"), *a);
  ASSERT_NE(named_parameters(*a)[0].second->value.to_host(), named_parameters(*b)[0].second->value.to_host());
  load_parameters(dir.file("a.safetensors"), *b);
  const auto pa = named_parameters(*a), pb = named_parameters(*b);
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i) {
    EXPECT_EQ(pa[i].second->value.to_host(), pb[i].second->value.to_host()) << pa[i].first;
    EXPECT_TRUE(pb[i].second->value.requires_grad()) << pa[i].first;
  }
}

// Many small tensors travel in chunks of one op each way, a large one alone:
// every chunk boundary keeps each tensor's values in its place. At small
// limits (64 tensors, 2 KiB), so that a few hundred tensors cross each of them.
class SmallChunks {
 public:
  explicit SmallChunks(ChunkLimits l) : previous_(checkpoint_chunk_limits()) { set_checkpoint_chunk_limits(l); }
  ~SmallChunks() { set_checkpoint_chunk_limits(previous_); }

 private:
  ChunkLimits previous_;
};

TEST_P(Checkpoint, ManyTensorsAndALargeOneRoundTripInChunks) {
  SmallChunks small({/*bytes=*/2048, /*tensors=*/64});
  ScratchDir dir;
  // 150 tensors of 8 bytes (chunks of 64 tensors), 150 of 400 bytes (chunks of
  // five: 2,000 bytes), and one of 4 KiB among the first, a chunk of its own.
  std::vector<std::pair<std::string, Tensor>> ts;
  std::vector<std::vector<float>> values;
  for (int i = 0; i < 300; ++i) {
    std::vector<float> v(i < 150 ? 2 : 100);
    for (size_t k = 0; k < v.size(); ++k) v[k] = float(i) + float(k) / 128;
    ts.emplace_back("t" + std::to_string(i), from_host({int64_t(v.size())}, v.data(), dev()));
    values.push_back(v);
  }
  std::vector<float> big(1024);
  for (size_t i = 0; i < big.size(); ++i) big[i] = float(i % 1000);
  ts.insert(ts.begin() + 100, {"big", from_host({int64_t(big.size())}, big.data(), dev())});
  values.insert(values.begin() + 100, big);
  save_safetensors(dir.file("m.safetensors"), ts);
  const std::vector<NamedValues> got = read_safetensors(dir.file("m.safetensors"));
  ASSERT_EQ(got.size(), ts.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].name, ts[i].first);
    ASSERT_EQ(got[i].values, values[i]) << ts[i].first;
  }
  // A model's parameters both ways: 200 tensors of 8 to 16 bytes, four chunks
  // of 64 tensors or fewer, an upload and an unpack each.
  const uint64_t before = queue_stats(dev()).pushed;
  auto n = net(1, models::LayerSpec{std::vector<int64_t>(99, 2)});
  const uint64_t pushed_by_net = queue_stats(dev()).pushed - before;
  save_parameters(dir.file("n.safetensors"), *n);
  auto m = net(2, models::LayerSpec{std::vector<int64_t>(99, 2)});
  const uint64_t loads_before = queue_stats(dev()).pushed;
  load_parameters(dir.file("n.safetensors"), *m);
  EXPECT_EQ(queue_stats(dev()).pushed - loads_before, 8u);
  EXPECT_GT(pushed_by_net, 200u);
  const auto pn = named_parameters(*n), pm = named_parameters(*m);
  ASSERT_EQ(pn.size(), 200u);
  ASSERT_EQ(pm.size(), pn.size());
  for (size_t i = 0; i < pn.size(); ++i)
    EXPECT_EQ(pn[i].second->value.to_host(), pm[i].second->value.to_host()) << pn[i].first;
}

TEST(CheckpointChunks, ALimitOfZeroIsRefused) {
  const ChunkLimits before = checkpoint_chunk_limits();
  EXPECT_THROW(set_checkpoint_chunk_limits({0, 1}), Error);
  EXPECT_THROW(set_checkpoint_chunk_limits({1, 0}), Error);
  EXPECT_EQ(checkpoint_chunk_limits().bytes, before.bytes);
  EXPECT_EQ(checkpoint_chunk_limits().tensors, before.tensors);
  EXPECT_EQ(before.bytes, size_t{8} << 20);
  EXPECT_EQ(before.tensors, 8192u);
}

// A file in the model's order is matched by position, any other by name: both
// load the same parameters, and a name the model lacks is refused either way.
TEST_P(Checkpoint, AFileInAnotherOrderLoadsByName) {
  ScratchDir dir;
  auto a = net(1), b = net(2);
  std::vector<std::pair<std::string, Tensor>> ts;
  for (auto& [name, p] : named_parameters(*a)) ts.emplace_back(name, p->value);
  std::reverse(ts.begin(), ts.end());
  save_safetensors(dir.file("r.safetensors"), ts);
  load_parameters(dir.file("r.safetensors"), *b);
  const auto pa = named_parameters(*a), pb = named_parameters(*b);
  for (size_t i = 0; i < pa.size(); ++i)
    EXPECT_EQ(pa[i].second->value.to_host(), pb[i].second->value.to_host()) << pa[i].first;
  ts.front().first = "dense9.bias";  // in order but for one name
  std::reverse(ts.begin(), ts.end());
  save_safetensors(dir.file("x.safetensors"), ts);
  EXPECT_NE(error_of(dir.file("x.safetensors")).find("has no tensor 'dense2.bias'"), std::string::npos)
      << error_of(dir.file("x.safetensors"));
}

TEST_P(Checkpoint, AHandWrittenFileIsRead) {
  ScratchDir dir;
  const float v[2] = {1.5f, -2.f};
  std::string data(8, '\0');
  std::memcpy(&data[0], v, 8);  // little-endian on the machines this runs on
  spit(dir.file("h.safetensors"),
       file_of(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"__metadata__":{"k":"v"}})", data));
  const auto t = read_safetensors(dir.file("h.safetensors"));
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].name, "x");
  EXPECT_EQ(t[0].shape, (Shape{2}));
  EXPECT_EQ(t[0].values, (std::vector<float>{1.5f, -2.f}));
}

// The format's rules, which a lenient reader would let through: byte ranges
// that overlap or leave a hole, bytes after the last tensor, a key given
// twice (a lenient parser keeps the last silently), __metadata__ that is not strings
// to strings. Each is one line naming the file.
TEST_P(Checkpoint, FilesThatBreakTheFormatsRulesAreRefused) {
  ScratchDir dir;
  const std::string two = R"("a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]})";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {file_of("{" + two + R"(,"b":{"dtype":"F32","shape":[1],"data_offsets":[2,6]}})", std::string(8, '\0')),
       "overlap the bytes before it"},
      {file_of("{" + two + R"(,"b":{"dtype":"F32","shape":[1],"data_offsets":[20,24]}})", std::string(24, '\0')),
       "leave a hole after the bytes before it, which end at 4"},
      {file_of("{" + two + "}", std::string(4 + 100, '\0')), "100 bytes after its last tensor's data"},
      {file_of("{" + two + "," + two + "}", std::string(4, '\0')), "gives the key 'a' twice"},
      {file_of(R"({"a":{"dtype":"F32","dtype":"F32","shape":[1],"data_offsets":[0,4]}})", std::string(4, '\0')),
       "gives the key 'dtype' twice"},
      {file_of("{" + two + R"(,"__metadata__":{"k":1}})", std::string(4, '\0')), "__metadata__ 'k' is not a string"},
      {file_of("{" + two + R"(,"__metadata__":"v"})", std::string(4, '\0')), "its __metadata__ is not an object"},
      // A header over the format's cap is refused naming the cap (the length alone: nothing more is read).
      {std::string("\x68\x00\x50\x06\x00\x00\x00\x00{}", 10),
       "a header of 105906280 bytes, over the format's cap of 104857600 (100 MiB)"},
      // The header begins with '{' and is padded with spaces only, after its JSON.
      {file_of("\xef\xbb\xbf{" + two + "}", std::string(4, '\0')), "its header begins with '\\xef\\xbb\\xbf{', not '{'"},
      {file_of("  {" + two + "}", std::string(4, '\0')), "its header begins with '  {\"', not '{'"},
      {file_of(std::string(2, '\0') + "{" + two + "}", std::string(4, '\0')), "its header begins with '\\x00\\x00{\"'"},
      {file_of("{" + two + "}" + std::string(3, '\0'), std::string(4, '\0')), "padding is spaces only"},
      {file_of("{" + two + "}\n", std::string(4, '\0')), "its header ends with '\\n' after its JSON"},
      // Bytes of the file are shown quoted with escapes: one line, no terminal escape, nothing cut at a NUL.
      {file_of(R"({"a":{"dtype":"\u001b[31mX\nY","shape":[1],"data_offsets":[0,4]}})", std::string(4, '\0')),
       "tensor 'a' is '\\x1b[31mX\\nY'; only F32"},
      {file_of(R"({"a":{"dtype":"F\u00003","shape":[1],"data_offsets":[0,4]}})", std::string(4, '\0')),
       "tensor 'a' is 'F\\x003'; only F32"},
  };
  int i = 0;
  for (const auto& [bytes, want] : cases) {
    const std::string path = dir.write("bad" + std::to_string(i++) + ".safetensors", bytes);
    SCOPED_TRACE(want);
    std::string e;
    try {
      read_safetensors(path);
    } catch (const Error& x) {
      e = x.what();
    }
    EXPECT_NE(e.find(want), std::string::npos) << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
    EXPECT_EQ(e.find('\x1b'), std::string::npos) << e;
    EXPECT_EQ(e.rfind("'" + path + "'", 0), 0u) << "names the file first: " << e;
  }
  // The well-formed file beside them: two tensors tiling the data.
  const std::string ok = dir.write(
      "ok.safetensors", file_of("{" + two + R"(,"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", std::string(8, '\0')));
  EXPECT_EQ(read_safetensors(ok).size(), 2u);
}

TEST_P(Checkpoint, EveryFileItCannotTakeIsOneLineNamingTheFileAndWhy) {
  ScratchDir dir;
  auto n = net(1);
  save_parameters(dir.file("good.safetensors"), *n);
  const std::string good = slurp(dir.file("good.safetensors"));
  auto other = net(1, models::LayerSpec{{6, 4}});  // dense0 (6,3), dense1 (4,6)
  save_parameters(dir.file("other.safetensors"), *other);
  const std::string f32 = R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {dir.file("missing.safetensors"), "cannot read"},
      {dir.write("empty.safetensors", ""), "under the 8"},
      {dir.write("text.safetensors", "hello, world, not a tensor file"), "not a safetensors file"},
      {dir.write("truncated.safetensors", good.substr(0, good.size() - 10)), "truncated"},
      {dir.write("notjson.safetensors", file_of("{nope}", "")), "not JSON"},
      {dir.write("f16.safetensors", file_of(R"({"x":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}})", "abcd")),
       "is 'F16'; only F32"},
      {dir.write("short.safetensors", file_of(R"({"x":{"dtype":"F32","shape":[3],"data_offsets":[0,4]}})", "abcd")),
       "need 3 x 4 bytes"},
      {dir.write("extra.safetensors", file_of(f32, "abcd")), "no tensor 'dense0.weight'"},
      {dir.file("other.safetensors"), "tensor 'dense0.weight' is (6, 3) in the file, (5, 3) in the model"},
  };
  for (const auto& [path, want] : cases) {
    SCOPED_TRACE(path);
    const std::string e = error_of(path);
    EXPECT_NE(e.find(want), std::string::npos) << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
    EXPECT_NE(e.find(path.substr(path.rfind('/') + 1)), std::string::npos) << "names the file: " << e;
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, Checkpoint, ::testing::ValuesIn(test_devices()), device_name);

}  // namespace
}  // namespace amlp::testing
