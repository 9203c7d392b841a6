// Covers framework/util/parse.cpp, train/options/options.cpp and option_values.cpp (the fuzz test).
// framework/parse.h, the one parser for the numbers, byte
// sizes and lists people type: ranges named in every message, decimal only
// (no hex, octal, '+', whitespace or trailing junk), byte units, lists with
// empty items, overflow; and a deterministic fuzz test that feeds random bytes
// to every parser and to train_mlp's option parser, which must either accept
// or reject with their own error, never crash or throw anything else.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <cstdint>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "framework/device.h"
#include "framework/parse.h"
#include "models/mlp.h"
#include "train/options/options.h"
#include "train/options/sync_policy.h"
#include "train/train_test_util.h"
#include "sanitized.h"
#include "train/studies/comparisons.h"

#if AMLP_SANITIZED
constexpr int kFuzzScale = 4;  // sanitizers run several times slower: a quarter of the inputs
#else
constexpr int kFuzzScale = 1;
#endif

namespace amlp {
namespace {

constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
constexpr uint64_t kUint64Max = std::numeric_limits<uint64_t>::max();

// The message of the ParseError `f` throws, or "" (and a failure) if it throws none.
template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const ParseError& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "accepted";
  return "";
}

// --- integers ----------------------------------------------------------------------

TEST(ParseInt, ReadsDecimalIntegersInRange) {
  EXPECT_EQ(parse_int("1024", "n", 1, 1 << 20), 1024);
  EXPECT_EQ(parse_int("1", "n", 1, 100), 1);
  EXPECT_EQ(parse_int("100", "n", 1, 100), 100);
  EXPECT_EQ(parse_int("-5", "n", -10, 10), -5);
  EXPECT_EQ(parse_int("-0", "n", 0, 0), 0);
  EXPECT_EQ(parse_int("010", "n", 0, 100), 10);  // decimal: leading zeros are not octal
  EXPECT_EQ(parse_int("0000000000000000000000042", "n", 0, 100), 42);
  EXPECT_EQ(parse_int("9223372036854775807", "n", kInt64Min, kInt64Max), kInt64Max);
  EXPECT_EQ(parse_int("-9223372036854775808", "n", kInt64Min, kInt64Max), kInt64Min);
}

TEST(ParseInt, OutOfRangeNamesTheRange) {
  EXPECT_EQ(error_of([] { parse_int("0", "--batches", 1, 100); }), "--batches must be an integer in [1, 100] (got 0)");
  EXPECT_EQ(error_of([] { parse_int("101", "--batches", 1, 100); }),
            "--batches must be an integer in [1, 100] (got 101)");
  EXPECT_EQ(error_of([] { parse_int("-3", "--batches", 1, 100); }),
            "--batches must be an integer in [1, 100] (got -3)");
  try {
    parse_int("0", "--batches", 1, 100);
  } catch (const ParseError& e) {
    EXPECT_EQ(e.problem(), "must be an integer in [1, 100] (got 0)");  // for callers naming the value their way
  }
}

TEST(ParseInt, OverflowIsOutOfRangeNotWrapped) {
  EXPECT_EQ(error_of([] { parse_int("99999999999999999999", "n", 1, 100); }),
            "n must be an integer in [1, 100] (got 99999999999999999999)");
  error_of([] { parse_int("9223372036854775808", "n", kInt64Min, kInt64Max); });
  error_of([] { parse_int("-9223372036854775809", "n", kInt64Min, kInt64Max); });
  error_of([] { parse_int("18446744073709551617", "n", kInt64Min, kInt64Max); });  // 2^64 + 1 wraps to 1
  error_of([] { parse_int("36893488147419103233", "n", kInt64Min, kInt64Max); });  // 2^65 + 1
  // A very long number is cut in the message, which stays one line.
  const std::string msg = error_of([] { parse_int(std::string(500, '9'), "n", 1, 100); });
  EXPECT_LT(msg.size(), 150u) << msg;
}

TEST(ParseInt, DecimalOnly) {
  for (const char* bad : {"0x10", "0X10", "0b1", "+5", " 5", "5 ", "\t5", "5\n", "", "-", "--5", "1e3", "1.0",
                          "5x", "x5", "1,000", "1_000", "٣"}) {
    const std::string msg = error_of([&] { parse_int(bad, "--batches", 1, 100); });
    EXPECT_EQ(msg.rfind("--batches must be an integer in [1, 100] (got '", 0), 0u) << msg;
  }
  // The text is quoted with its control bytes escaped.
  EXPECT_EQ(error_of([] { parse_int("0x10", "--batches", 1, 100); }),
            "--batches must be an integer in [1, 100] (got '0x10')");
  EXPECT_EQ(error_of([] { parse_int("5\n", "n", 1, 100); }), "n must be an integer in [1, 100] (got '5\\n')");
  EXPECT_EQ(error_of([] { parse_int(std::string("5\0", 2), "n", 1, 100); }),
            "n must be an integer in [1, 100] (got '5\\x00')");
}

TEST(ParseUint, FullRangeAndNoNegatives) {
  EXPECT_EQ(parse_uint("18446744073709551615", "--seed", 0, kUint64Max), kUint64Max);
  EXPECT_EQ(parse_uint("0", "--seed", 0, kUint64Max), 0u);
  EXPECT_EQ(parse_uint("-0", "--seed", 0, kUint64Max), 0u);
  EXPECT_EQ(error_of([] { parse_uint("18446744073709551616", "--seed", 0, kUint64Max); }),
            "--seed must be an integer in [0, 18446744073709551615] (got 18446744073709551616)");
  EXPECT_EQ(error_of([] { parse_uint("-1", "--seed", 0, kUint64Max); }),
            "--seed must be an integer in [0, 18446744073709551615] (got -1)");
  EXPECT_EQ(error_of([] { parse_uint("11", "n", 2, 10); }), "n must be an integer in [2, 10] (got 11)");
  for (const char* bad : {"0x1", "+1", " 1", "1 ", "", "1.5"}) error_of([&] { parse_uint(bad, "n", 0, 10); });
}

// --- floats --------------------------------------------------------------------------

TEST(ParseFloat, ReadsDecimalNumbers) {
  EXPECT_DOUBLE_EQ(parse_float("0.005", "--lr"), 0.005);
  EXPECT_DOUBLE_EQ(parse_float(".5", "x"), 0.5);
  EXPECT_DOUBLE_EQ(parse_float("5.", "x"), 5.0);
  EXPECT_DOUBLE_EQ(parse_float("-1e-3", "x"), -1e-3);
  EXPECT_DOUBLE_EQ(parse_float("1E+3", "x"), 1000.0);
  EXPECT_DOUBLE_EQ(parse_float("007", "x"), 7.0);
  EXPECT_EQ(parse_float("1e-999", "x"), 0.0);  // underflow is zero, not an error
}

TEST(ParseFloat, RejectsWhatStrtodWouldTake) {
  for (const char* bad : {"0x10", "0x1p3", "nan", "NAN", "inf", "-inf", "infinity", "+1", " 1", "1 ", "", ".", "-",
                          "e5", "1e", "1e+", "1.5.2", "1,5", "1f", "--1"})
    EXPECT_EQ(error_of([&] { parse_float(bad, "--lr"); }), std::string("--lr must be a number (got ") +
                                                               quote(bad) + ")");
  EXPECT_EQ(error_of([] { parse_float("1e999", "--lr"); }), "--lr must be a number of magnitude at most 1.8e308 (got 1e999)");
  error_of([] { parse_float("-1e999", "--lr"); });
}

// --- byte sizes -----------------------------------------------------------------------

TEST(ParseByteSize, UnitsAreBinaryOrDecimalAndCaseInsensitive) {
  const auto b = [](const char* t) { return parse_byte_size(t, "--memory-limit"); };
  EXPECT_EQ(b("0"), 0u);
  EXPECT_EQ(b("4096"), 4096u);
  EXPECT_EQ(b("4096B"), 4096u);
  EXPECT_EQ(b("4096b"), 4096u);
  EXPECT_EQ(b("2K"), 2048u);
  EXPECT_EQ(b("2k"), 2048u);
  EXPECT_EQ(b("2KiB"), 2048u);
  EXPECT_EQ(b("2kib"), 2048u);
  EXPECT_EQ(b("2KB"), 2000u);
  EXPECT_EQ(b("2kb"), 2000u);
  EXPECT_EQ(b("3M"), uint64_t(3) << 20);
  EXPECT_EQ(b("3MiB"), uint64_t(3) << 20);
  EXPECT_EQ(b("3MB"), 3000000u);
  EXPECT_EQ(b("1gIb"), uint64_t(1) << 30);
  EXPECT_EQ(b("1G"), uint64_t(1) << 30);
  EXPECT_EQ(b("2GB"), 2000000000u);
  EXPECT_EQ(b("1T"), uint64_t(1) << 40);
  EXPECT_EQ(b("1TiB"), uint64_t(1) << 40);
  EXPECT_EQ(b("1TB"), 1000000000000u);
  EXPECT_EQ(b("1024TiB"), kMaxByteSize);  // the default maximum itself
  EXPECT_EQ(b("007K"), 7168u);
}

TEST(ParseByteSize, FractionsOnlyWhereTheUnitMakesThemWhole) {
  const auto b = [](const char* t) { return parse_byte_size(t, "n"); };
  EXPECT_EQ(b("1.5GiB"), uint64_t(3) << 29);
  EXPECT_EQ(b("1.5GB"), 1500000000u);
  EXPECT_EQ(b("0.5K"), 512u);
  EXPECT_EQ(b(".5K"), 512u);
  EXPECT_EQ(b("1.0"), 1u);
  EXPECT_EQ(b("1.000000000000000000000000000000"), 1u);  // trailing zeros are not decimals
  EXPECT_EQ(b("0.001KB"), 1u);
  EXPECT_EQ(b("0.0009765625K"), 1u);  // 2^-10 KiB, exactly
  for (const char* bad : {"1.5", "1.5B", "0.1K", "0.0001KB", "0.00000000000000000000000001T"}) {
    const std::string msg = error_of([&] { parse_byte_size(bad, "--memory-limit"); });
    EXPECT_NE(msg.find("(got '" + std::string(bad) + "')"), std::string::npos) << msg;
  }
  EXPECT_EQ(error_of([] { parse_byte_size("1.5", "--memory-limit"); }),
            "--memory-limit must be a byte size of at most 1024TiB, such as 4096, 512KiB, 256MiB, 1G or 2GB; not a "
            "whole number of bytes (got '1.5')");
}

TEST(ParseByteSize, TooLargeNamesTheMaximum) {
  EXPECT_EQ(error_of([] { parse_byte_size("2048TiB", "--memory-limit"); }),
            "--memory-limit must be a byte size of at most 1024TiB, such as 4096, 512KiB, 256MiB, 1G or 2GB (got "
            "'2048TiB')");
  for (const char* big : {"1125899906842625", "99999999999T", "99999999999999999999", "99999999999999999999999999T",
                          "1024.5TiB", "1126TB"})
    EXPECT_EQ(error_of([&] { parse_byte_size(big, "n"); }),
              "n must be a byte size of at most 1024TiB, such as 4096, 512KiB, 256MiB, 1G or 2GB (got '" +
                  std::string(big) + "')");
  EXPECT_EQ(parse_byte_size("1KiB", "n", 1024), 1024u);
  EXPECT_EQ(error_of([] { parse_byte_size("1025", "n", 1024); }).find("n must be a byte size of at most 1KiB"), 0u);
  EXPECT_EQ(error_of([] { parse_byte_size("1001", "n", 1000); }).find("n must be a byte size of at most 1000B"), 0u);
}

TEST(ParseByteSize, RejectsJunk) {
  for (const char* bad : {"", "MiB", "-1", "+1", " 1", "1 ", "1 G", "1G ", "1..2M", "1e9", "0x10", "1.5.2K", "1KiBB",
                          "1Ki", "1iB", "12XB", "1G\n", "."})
    EXPECT_EQ(error_of([&] { parse_byte_size(bad, "--max-pending-bytes"); })
                  .rfind("--max-pending-bytes must be a byte size of at most 1024TiB", 0),
              0u)
        << bad;
  EXPECT_EQ(error_of([] { parse_byte_size("12XB", "n"); }),
            "n must be a byte size of at most 1024TiB, such as 4096, 512KiB, 256MiB, 1G or 2GB; 'XB' is not a unit "
            "(got '12XB')");
}

// --- durations --------------------------------------------------------------------------

TEST(ParseDuration, UnitsAndFractions) {
  const auto d = [](const char* t) { return parse_duration_ns(t, "--host-work", int64_t(60) * 1000000000); };
  EXPECT_EQ(d("0"), 0);
  EXPECT_EQ(d("0ms"), 0);
  EXPECT_EQ(d("2ms"), 2000000);
  EXPECT_EQ(d("1.5ms"), 1500000);
  EXPECT_EQ(d(".5ms"), 500000);
  EXPECT_EQ(d("250us"), 250000);
  EXPECT_EQ(d("7ns"), 7);
  EXPECT_EQ(d("0.01s"), 10000000);
  EXPECT_EQ(d("60s"), int64_t(60) * 1000000000);
  EXPECT_EQ(d("1.0000004us"), 1000);  // rounded to the nearest nanosecond
}

TEST(ParseDuration, RejectsJunkAndNamesTheRange) {
  for (const char* bad : {"", "2", "ms", "-1ms", "+1ms", " 2ms", "2ms ", "2 ms", "2MS", "2m", "1e3ms", "1..2ms",
                          "0x10ms", "2msec", "61s", "nanms", "infs"})
    EXPECT_EQ(error_of([&] { parse_duration_ns(bad, "--host-work", int64_t(60) * 1000000000); })
                  .rfind("--host-work must be a duration in [0, 60s] with a unit ns, us, ms or s", 0),
              0u)
        << bad;
  EXPECT_EQ(error_of([] { parse_duration_ns("3ms", "n", 2500000); }),
            "n must be a duration in [0, 2500us] with a unit ns, us, ms or s, such as 2ms, 1.5ms or 250us (got '3ms')");
}

// --- lists ------------------------------------------------------------------------------

TEST(SplitList, KeepsEmptyItems) {
  using V = std::vector<std::string_view>;
  EXPECT_EQ(split_list(""), (V{""}));
  EXPECT_EQ(split_list("a"), (V{"a"}));
  EXPECT_EQ(split_list("a,"), (V{"a", ""}));
  EXPECT_EQ(split_list(",a"), (V{"", "a"}));
  EXPECT_EQ(split_list(","), (V{"", ""}));
  EXPECT_EQ(split_list("2048,,512"), (V{"2048", "", "512"}));
  EXPECT_EQ(split_list("a:b,c", ':'), (V{"a", "b,c"}));
}

TEST(ParseIntList, ReadsItemsAndNamesTheBadOne) {
  EXPECT_EQ(parse_int_list("8,4", "--hidden", 1, 1 << 20), (std::vector<int64_t>{8, 4}));
  EXPECT_EQ(parse_int_list("7", "x", 1, 10), (std::vector<int64_t>{7}));
  EXPECT_EQ(error_of([] { parse_int_list("2,,3", "--compare-every", 1, 100); }),
            "--compare-every must be comma-separated integers in [1, 100] (got '2,,3': item 2 is empty)");
  EXPECT_EQ(error_of([] { parse_int_list("2,0", "x", 1, 100); }),
            "x must be comma-separated integers in [1, 100] (got '2,0': item 2 is out of range)");
  EXPECT_EQ(error_of([] { parse_int_list("0x2,3", "x", 1, 100); }),
            "x must be comma-separated integers in [1, 100] (got '0x2,3': item 1 is not a decimal integer)");
  EXPECT_EQ(error_of([] { parse_int_list("", "x", 1, 100); }),
            "x must be comma-separated integers in [1, 100] (got '': it is empty)");
  EXPECT_EQ(error_of([] { parse_int_list("99999999999999999999", "x", 1, 100); }),
            "x must be comma-separated integers in [1, 100] (got '99999999999999999999': it is out of range)");
  for (const char* bad : {"2,", ",2", ",", "2, 3", "2 ,3", "+2", "2;3"}) error_of([&] { parse_int_list(bad, "x", 1, 100); });
}

TEST(Quoted, KeepsMessagesOnOneReadableLine) {
  EXPECT_EQ(quote("abc"), "'abc'");
  EXPECT_EQ(quote(""), "''");
  EXPECT_EQ(quote("a\nb\tc\rd"), "'a\\nb\\tc\\rd'");
  EXPECT_EQ(quote(std::string("\0\x7f\xff", 3)), "'\\x00\\x7f\\xff'");
  EXPECT_EQ(quote("it's"), "'it\\'s'");
  EXPECT_EQ(quote("a\\b"), "'a\\\\b'");
  EXPECT_EQ(quote(std::string(1000, 'x')), "'" + std::string(64, 'x') + "...'");
}

// A path in a message: one line whatever its bytes, its two ends
// shown when it is long, letters of any script kept.
TEST(ShownPath, EscapesControlsAndKeepsLetters) {
  EXPECT_EQ(shown_path("out/mem.csv"), "out/mem.csv");
  EXPECT_EQ(shown_path(""), "");
  EXPECT_EQ(shown_path("a\nb\tc\rd"), "a\\nb\\tc\\rd");
  EXPECT_EQ(shown_path("a\\nb"), "a\\\\nb") << "a backslash in the name is not an escape";
  EXPECT_EQ(shown_path(std::string("x\0y\x1b[2J\x7f", 8)), "x\\x00y\\x1b[2J\\x7f");
  EXPECT_EQ(shown_path("r\xc3\xa9sum\xc3\xa9/\xe6\x97\xa5\xe6\x9c\xac.json"), "r\xc3\xa9sum\xc3\xa9/\xe6\x97\xa5\xe6\x9c\xac.json");
  // Not UTF-8, overlong, a surrogate, a C1 control (U+009B, a terminal's CSI): bytes.
  EXPECT_EQ(shown_path("\xff\xc0\xaf\xed\xa0\x80\xc2\x9b"), "\\xff\\xc0\\xaf\\xed\\xa0\\x80\\xc2\\x9b");
  EXPECT_EQ(shown_path("it's"), "it's") << "the message's quotes are its own";
}

TEST(ShownPath, ALongPathShowsItsTwoEnds) {
  const std::string at_limit(kMaxShownPath, 'x');
  EXPECT_EQ(shown_path(at_limit), at_limit);
  const std::string path = "/" + std::string(4990, 'd') + "/end.json";
  const std::string shown = shown_path(path);
  EXPECT_EQ(shown, path.substr(0, 100) + "..." + path.substr(path.size() - 80));
  // A 5000-byte path of newlines stays one short line too.
  const auto escaped_newlines = [](int n) {
    std::string s;
    for (int i = 0; i < n; ++i) s += "\\n";
    return s;
  };
  const std::string lines = shown_path(std::string(5000, '\n'));
  EXPECT_EQ(lines, escaped_newlines(100) + "..." + escaped_newlines(80));
  // Cut at a character's boundary: no half of a two-byte letter at either end.
  std::string accents;
  for (int i = 0; i < 200; ++i) accents += "\xc3\xa9";
  const std::string cut = shown_path("/" + accents);  // 401 bytes: the head ends inside a letter
  EXPECT_EQ(cut, "/" + accents.substr(0, 98) + "..." + accents.substr(accents.size() - 80));
}

// --- the parsers built on it -------------------------------------------------------------

TEST(ParseUsers, SyncModeLayerSpecAndDeviceAreDecimalOnly) {
  EXPECT_EQ(train::parse_sync_mode("every=010").every, 10);
  EXPECT_EQ(error_of([] { train::parse_sync_mode("every=0x2"); }),
            "sync mode must be batch, none or every=K with K in [1, 1000000000] (got 'every=0x2')");
  for (const char* bad : {"every=+2", "every= 2", "every=2 ", "every=1000000001", "every=99999999999999999999"})
    error_of([&] { train::parse_sync_mode(bad); });
  EXPECT_EQ(models::parse_layer_spec("").hidden.size(), 0u);
  EXPECT_EQ(models::parse_layer_spec("2048,512").hidden, (std::vector<int64_t>{2048, 512}));
  EXPECT_EQ(error_of([] { models::parse_layer_spec("2048,1048577"); }),
            "layer spec must be comma-separated integers in [1, 1048576] (got '2048,1048577': item 2 is out of range)");
  for (const char* bad : {"2048,", "0x800", "+8", "8, 4", ","}) error_of([&] { models::parse_layer_spec(bad); });
  EXPECT_EQ(parse_device("cpu:01"), Device::cpu(1));
  for (const char* bad : {"cpu:0x1", "cpu:+1", "cpu: 1", "cpu:1 ", "cpu:99999999999999999999"})
    EXPECT_THROW(parse_device(bad), DeviceError) << bad;
}

// --- fuzz ---------------------------------------------------------------------------------

// Random text biased toward what the parsers look at: digits, signs, dots,
// exponents, separators, unit letters, whitespace, control and high bytes.
class Fuzz {
 public:
  explicit Fuzz(uint64_t seed) : rng_(seed) {}

  std::string text() {
    static const std::string kAlphabet = "0123456789-+.,eExXkKmMgGtTiIbB=:ycpuda \t\n";
    const size_t n = pick(0, pick(0, 1) ? 8 : 40);
    std::string s;
    for (size_t i = 0; i < n; ++i) {
      switch (pick(0, 9)) {
        case 0:
          s += static_cast<char>(pick(0, 255));  // any byte, NUL and 0xff included
          break;
        case 1:
          s += "99999999999999999999";
          break;
        default:
          s += kAlphabet[pick(0, kAlphabet.size() - 1)];
      }
    }
    return s;
  }
  size_t pick(size_t lo, size_t hi) { return std::uniform_int_distribution<size_t>(lo, hi)(rng_); }

 private:
  std::mt19937_64 rng_;
};

struct NoOtherError {};

// Runs `f`; a ParseError (or `Also`) is a rejection, anything else a failure.
template <class Also = NoOtherError, class F>
bool accepts(F f, const std::string& text) {
  try {
    f();
    return true;
  } catch (const ParseError& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << quote(text);
  } catch (const Also&) {
  } catch (const std::exception& e) {
    ADD_FAILURE() << quote(text) << " threw " << e.what();
  }
  return false;
}

TEST(ParseFuzz, EveryParserAcceptsOrThrowsParseError) {
  Fuzz fuzz(20240601);
  size_t accepted = 0;
  // The parsers run on this thread alone: ThreadSanitizer has nothing to
  // watch, and runs a tenth (the release and ASan builds run them all).
  const int texts = amlp::testing::kThreadSanitized ? 2000 : 20000;
  for (int i = 0; i < texts; ++i) {
    const std::string t = fuzz.text();
    int64_t iv = 0;
    if (accepts([&] { iv = parse_int(t, "n", -1000, 1000000); }, t)) {
      ++accepted;
      EXPECT_TRUE(iv >= -1000 && iv <= 1000000) << quote(t);
      EXPECT_EQ(iv, std::stoll(t)) << quote(t);  // only what stoll reads in full
    }
    uint64_t uv = 0;
    if (accepts([&] { uv = parse_uint(t, "n", 0, kUint64Max); }, t)) EXPECT_EQ(uv, std::stoull(t)) << quote(t);
    double dv = 0;
    if (accepts([&] { dv = parse_float(t, "x"); }, t)) {
      EXPECT_TRUE(std::isfinite(dv)) << quote(t);
      EXPECT_EQ(t.find_first_of("xXnNiI +\t\n"), std::string::npos) << quote(t);
    }
    uint64_t bv = 0;
    if (accepts([&] { bv = parse_byte_size(t, "b"); }, t)) EXPECT_LE(bv, kMaxByteSize) << quote(t);
    if (accepts([&] { bv = parse_byte_size(t, "b", 4096); }, t)) EXPECT_LE(bv, 4096u) << quote(t);
    EXPECT_EQ(split_list(t).size(), size_t(std::count(t.begin(), t.end(), ',')) + 1) << quote(t);
    std::vector<int64_t> list;
    if (accepts([&] { list = parse_int_list(t, "l", 1, 100); }, t)) {
      EXPECT_EQ(list.size(), split_list(t).size());
      for (int64_t v : list) EXPECT_TRUE(v >= 1 && v <= 100) << quote(t);
    }
    const std::string q = quote(t);
    EXPECT_EQ(q.find_first_of("\n\r\t", 0), std::string::npos);
    EXPECT_LE(q.size(), 2 + 64 * 4 + 3u);
    accepts([&] { train::parse_sync_mode(t); }, t);
    accepts([&] { models::parse_layer_spec(t); }, t);
    accepts<DeviceError>([&] { parse_device(t); }, t);
    accepts([&] { train::parse_sync_mode("every=" + t); }, t);
    accepts<DeviceError>([&] { parse_device("cpu:" + t); }, t);
  }
  EXPECT_GT(accepted, size_t(texts) / 200);  // the fuzz reaches the accepting paths too
}

// train_mlp's options, from the command line and from a config file: each run
// is a Run or one line of Error with exit status 2, never an exception.
TEST(ParseFuzz, TrainMlpOptionsAcceptOrExplainInOneLine) {
  static const char* const kKeys[] = {"device",        "sync",         "batches",   "batch-size",   "features",
                                      "hidden",        "lr",           "momentum",  "seed",         "max-pending",
                                      "max-pending-bytes", "memory-limit", "compare-every", "blocking", "compare"};
  Fuzz fuzz(7);
  amlp::testing::ScratchDir dir;
  size_t runs = 0, errors = 0;
  for (int i = 0; i < 1500; ++i) {
    std::vector<std::string> args;
    std::string ini;
    for (size_t k = fuzz.pick(0, 4); k > 0; --k) {
      const std::string key = kKeys[fuzz.pick(0, std::size(kKeys) - 1)];
      const std::string value = fuzz.pick(0, 3) ? fuzz.text() : std::to_string(fuzz.pick(0, 3000));
      switch (fuzz.pick(0, 3)) {
        case 0:
          args.push_back("--" + key);
          args.push_back(value);
          break;
        case 1:
          args.push_back("--" + key + "=" + value);
          break;
        case 2:
          ini += key + " = " + value + "\n";
          break;
        default:
          ini += fuzz.text() + "\n";  // a line of anything
      }
    }
    if (fuzz.pick(0, 5) == 0) args.push_back(fuzz.text());
    if (!ini.empty()) {
      args.push_back("--config");
      args.push_back(dir.write("fuzz.ini", ini));
    }
    train::ParseOutcome p;
    try {
      p = train::parse_options(args);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "threw " << e.what() << " for args ending " << quote(args.empty() ? "" : args.back());
      continue;
    }
    if (p.status == train::ParseStatus::Error) {
      ++errors;
      EXPECT_EQ(p.exit_code, train::kExitBadInput);
      EXPECT_FALSE(p.message.empty());
      EXPECT_EQ(p.message.find('\n'), std::string::npos) << p.message;
    } else if (p.status == train::ParseStatus::Run) {
      ++runs;
    }
  }
  EXPECT_GT(runs, 50u);
  EXPECT_GT(errors, 500u);
}

// --- fuzz: config files and argument lists of real options -------------------------

// Every long option train_mlp has, and what kind of value it takes.
enum class Kind { Int, Uint, Float, Bytes, Device, Sync, Layers, List, Path, Config, Flag, Exit };
struct OptionKind {
  const char* name;
  Kind kind;
};
const OptionKind kOptions[] = {
    {"device", Kind::Device},         {"sync", Kind::Sync},           {"batches", Kind::Int},
    {"batch-size", Kind::Int},        {"features", Kind::Int},        {"hidden", Kind::Layers},
    {"lr", Kind::Float},              {"momentum", Kind::Float},      {"seed", Kind::Uint},
    {"max-pending", Kind::Uint},      {"max-pending-bytes", Kind::Bytes}, {"memory-limit", Kind::Bytes},
    {"blocking", Kind::Flag},         {"tf32", Kind::Flag},           {"check-finite", Kind::Flag},
    {"memory-log", Kind::Path},       {"trace", Kind::Path},          {"summary-json", Kind::Path},
    {"compare", Kind::Flag},          {"compare-every", Kind::List},  {"config", Kind::Config},
    {"help", Kind::Exit},             {"version", Kind::Exit},
};

// Values for real options: mostly plausible or at a boundary, sometimes junk.
class OptionFuzz : public Fuzz {
 public:
  OptionFuzz(uint64_t seed, const amlp::testing::ScratchDir& dir) : Fuzz(seed), dir_(dir) {}

  std::string one_of(std::initializer_list<const char*> xs) {
    return *(xs.begin() + pick(0, xs.size() - 1));
  }
  std::string number() {
    switch (pick(0, 5)) {
      case 0: return std::to_string(pick(0, 10));
      case 1: return std::to_string(pick(0, 100000000));
      case 2: return "-" + std::to_string(pick(0, 1000));
      case 3: return one_of({"2147483647", "2147483648", "4294967296", "9223372036854775807", "9223372036854775808",
                             "18446744073709551615", "18446744073709551616", "16777216", "16777217", "100000001",
                             "1048576", "1048577", "1099511627776", "1099511627777", "-0", "00", "0.5"});
      default: return text();
    }
  }
  std::string value(Kind k) {
    if (pick(0, 9) == 0) return text();  // junk for anything
    switch (k) {
      case Kind::Int:
      case Kind::Uint: return number();
      case Kind::Float:
        return one_of({"0.005", "0", "-0.1", "0.9", "1", "0.999999", "1e-3", "1e38", "3.5e38", "1e309", "nan", "inf",
                       ".", "5.", ".5"});
      case Kind::Bytes:
        return pick(0, 1) ? number()
                          : number() + one_of({"K", "KiB", "M", "MiB", "G", "GB", "T", "TiB", "TB", "kb", "XB", "B"});
      case Kind::Device:
        return one_of({"auto", "cpu", "cpu:0", "cpu:1", "cpu:7", "cpu:8", "cpu:-1", "cuda", "cuda:0", "cuda:99",
                       "gpu", "CPU", "cpu:", "cpu:01", "cpu:99999999999999999999"});
      case Kind::Sync: return pick(0, 1) ? one_of({"batch", "none", "every", "every=", "Batch", "never"}) : "every=" + number();
      case Kind::Layers:
      case Kind::List: {
        std::string s;
        for (size_t n = pick(0, 4); n > 0; --n) s += (s.empty() ? "" : ",") + number();
        return pick(0, 5) ? s : s + ",";
      }
      case Kind::Path:
        return pick(0, 2) ? dir_.file("out" + std::to_string(pick(0, 3)) + ".csv")
                          : one_of({"", "/", "/nonexistent-dir/x.csv", "/dev/null", "/proc/version", "."});
      case Kind::Config:
        return one_of({"", "/nonexistent.ini", "/", "/dev/null", "/proc/self/status"});
      default: return number();
    }
  }
  // A random INI file: real keys with values, unknown keys, sections,
  // comments, blank lines, lines without '=', repeated keys, very long lines,
  // any bytes (NUL, CR, high bytes), a byte-order mark, no final newline.
  std::string config_file() {
    std::string f;
    if (pick(0, 20) == 0) f += "\xEF\xBB\xBF";
    for (size_t lines = pick(0, 8); lines > 0; --lines) {
      const OptionKind& o = kOptions[pick(0, std::size(kOptions) - 1)];
      std::string line;
      switch (pick(0, 11)) {
        case 0: line = "[" + one_of({"", "train", "device", "]"}) + "]"; break;
        case 1: line = one_of({"#", ";", "# batches = 3", ""}) + text(); break;
        case 2: line = text(); break;
        case 3: line = std::string(o.name) + " =" + std::string(pick(0, 1) ? 0 : 5000, 'x'); break;
        case 4: line = text() + " = " + value(Kind::Int); break;
        case 5: line = std::string(o.name); break;
        case 6: line = std::string(o.name) + one_of({"=", " = ", "==", " :", "\t=\t"}) + value(o.kind); break;
        default:
          line = std::string(o.name) + " = " + (o.kind == Kind::Flag ? one_of({"true", "false", "1", "0", "yes", "on", "2", ""})
                                                                     : value(o.kind));
      }
      f += line + one_of({"\n", "\n", "\n", "\r\n", "\r"});
    }
    if (pick(0, 5) == 0) f += "batches = " + number();  // no final newline
    if (pick(0, 10) == 0) {
      std::string bytes(pick(0, 300), '\0');
      for (char& c : bytes) c = static_cast<char>(pick(0, 255));
      f += bytes;
    }
    return f;
  }
  // An argument list of real option names in every spelling the parser meets.
  std::vector<std::string> args(bool allow_exit = true, std::initializer_list<const char*> skip = {}) {
    std::vector<std::string> a;
    for (size_t n = pick(0, 7); n > 0; --n) {
      const OptionKind& o = kOptions[pick(0, std::size(kOptions) - 1)];
      bool skipped = !allow_exit && o.kind == Kind::Exit;
      for (const char* s : skip) skipped = skipped || std::string(s) == o.name;
      if (skipped) continue;
      const std::string name = std::string("--") + o.name;
      const std::string v = o.kind == Kind::Config ? config_path() : value(o.kind);
      switch (o.kind == Kind::Flag || o.kind == Kind::Exit ? pick(0, 5) + 10 : pick(0, 9)) {
        case 0: a.push_back(name + "=" + v); break;
        case 1: a.push_back(name); break;                               // missing its value (or last)
        case 2: a.push_back(name.substr(0, pick(3, name.size()))); a.push_back(v); break;  // an abbreviation
        case 3: a.push_back("-" + name.substr(2)); a.push_back(v); break;  // one dash
        case 4: a.push_back(v); break;                                  // a stray word
        case 10: a.push_back(name + "=" + one_of({"1", "true", ""})); break;
        case 11: a.push_back(allow_exit ? one_of({"-h", "--h", "-"}) : "--blocking"); break;
        default: a.push_back(name); if (o.kind != Kind::Flag && o.kind != Kind::Exit) a.push_back(v);
      }
    }
    return a;
  }
  std::string config_path() {
    if (pick(0, 3) == 0) return value(Kind::Config);
    const std::string path = dir_.file("c" + std::to_string(pick(0, 2)) + ".ini");
    std::ofstream(path, std::ios::binary) << config_file();
    return path;
  }

 private:
  const amlp::testing::ScratchDir& dir_;
};

// One parse: a Run (with every value in its range), an Exit with its text,
// or one line of Error with exit status 2; never an exception.
struct Tally {
  size_t runs = 0, exits = 0, errors = 0;
};
void check_outcome(const std::vector<std::string>& args, Tally& tally) {
  train::ParseOutcome p;
  try {
    p = train::parse_options(args);
  } catch (const std::exception& e) {
    std::string all;
    for (const std::string& a : args) all += quote(a) + " ";
    ADD_FAILURE() << "threw " << e.what() << " for " << all;
    return;
  } catch (...) {
    ADD_FAILURE() << "threw something that is not a std::exception";
    return;
  }
  switch (p.status) {
    case train::ParseStatus::Error:
      ++tally.errors;
      EXPECT_EQ(p.exit_code, train::kExitBadInput);
      EXPECT_FALSE(p.message.empty());
      EXPECT_EQ(p.message.find_first_of("\n\r"), std::string::npos) << p.message;
      EXPECT_LE(p.message.size(), 1000u) << p.message;
      break;
    case train::ParseStatus::Exit:
      ++tally.exits;
      EXPECT_EQ(p.exit_code, 0);
      EXPECT_FALSE(p.message.empty());
      break;
    case train::ParseStatus::Run: {
      ++tally.runs;
      const train::Options& o = p.options;
      EXPECT_TRUE(o.batches >= 1 && o.batches <= 100000000) << o.batches;
      EXPECT_TRUE(o.batch_size >= 1 && o.batch_size <= (1 << 24)) << o.batch_size;
      EXPECT_TRUE(o.features >= 1 && o.features <= (1 << 24)) << o.features;
      for (int64_t h : o.hidden.hidden) EXPECT_TRUE(h >= 1 && h <= (1 << 20)) << h;
      EXPECT_TRUE(o.lr > 0 && std::isfinite(o.lr)) << o.lr;
      EXPECT_TRUE(o.momentum >= 0 && o.momentum < 1) << o.momentum;
      EXPECT_LE(o.max_pending_bytes, kMaxByteSize);
      EXPECT_LE(o.memory_limit, kMaxByteSize);
      if (const train::CompareSettings* c = o.studies.find<train::CompareSettings>())
        for (int k : c->every) EXPECT_TRUE(k >= 1 && k <= 1000000) << k;
      break;
    }
  }
}

// Config files of every shape, alone or with command-line options.
TEST(ParseFuzz, ConfigFilesAcceptOrExplainInOneLine) {
  amlp::testing::ScratchDir dir;
  OptionFuzz fuzz(8, dir);
  Tally t;
  const int kFiles = 3000 / kFuzzScale;
  for (int i = 0; i < kFiles; ++i) {
    const std::string path = dir.file("fuzz.ini");
    std::ofstream(path, std::ios::binary | std::ios::trunc) << fuzz.config_file();
    std::vector<std::string> args = fuzz.pick(0, 2) ? std::vector<std::string>{} : fuzz.args(false, {"config"});
    args.push_back("--config");
    args.push_back(path);
    check_outcome(args, t);
    if (::testing::Test::HasFailure()) break;
  }
  std::printf("[ fuzz     ] %d config files: %zu run, %zu rejected (exit 2)\n", kFiles, t.runs, t.errors);
  ::testing::Test::RecordProperty("config_files", kFiles);
  EXPECT_GT(t.runs, 50u);  // the fuzz reaches the accepting paths
  EXPECT_GT(t.errors, 500u);
}

// Argument lists made of the real option names with random values.
TEST(ParseFuzz, ArgumentListsOfRealOptionsAcceptOrExplainInOneLine) {
  amlp::testing::ScratchDir dir;
  OptionFuzz fuzz(9, dir);
  Tally t;
  const int kLists = 8000 / kFuzzScale;
  for (int i = 0; i < kLists; ++i) {
    check_outcome(fuzz.args(), t);
    if (::testing::Test::HasFailure()) break;
  }
  std::printf("[ fuzz     ] %d argument lists: %zu run, %zu exit 0 (--help/--version), %zu rejected (exit 2)\n",
              kLists, t.runs, t.exits, t.errors);
  ::testing::Test::RecordProperty("argument_lists", kLists);
  EXPECT_GT(t.runs, 200u);
  EXPECT_GT(t.exits, 100u);
  EXPECT_GT(t.errors, 1000u);
}

// The real binary, a few dozen times: options fuzzed as above, with the
// sizes fixed small (so a run that is accepted takes milliseconds) → exit 0,
// or exit 2 and one line on stderr; never a crash or a hang.
TEST(ParseFuzz, TrainMlpExitsZeroOrTwo) {
  amlp::testing::ScratchDir dir;
  OptionFuzz fuzz(10, dir);
  const auto shell_quote = [](const std::string& s) {
    std::string q = "'";
    for (char c : s) {
      if (c == '\0') continue;  // argv cannot hold one
      q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    }
    return q + "'";
  };
  const int kRuns = 50;
  int zero = 0, two = 0;
  for (int i = 0; i < kRuns; ++i) {
    // Sizes, memory limit and the finite check (which a huge --lr trips: exit 1, a failed run) are fixed.
    std::vector<std::string> args =
        fuzz.args(true, {"batches", "batch-size", "features", "hidden", "memory-limit", "check-finite", "config"});
    std::string cmd = "cd " + shell_quote(dir.path()) + " && timeout 60 " + amlp::testing::program_path("train_mlp");
    for (const std::string& a : args) cmd += " " + shell_quote(a);
    cmd += i % 5 == 0 ? " --batches 0" : " --batches 1 --batch-size 2 --features 2 --hidden 2";
    const amlp::testing::Ran r = amlp::testing::run_command(cmd);
    SCOPED_TRACE(cmd);
    EXPECT_TRUE(r.code == 0 || r.code == 2) << "exit " << r.code << "\n" << r.err;
    if (r.code == 2) {
      ++two;
      EXPECT_EQ(r.err_lines(), 1u) << r.err;
      EXPECT_EQ(r.err.rfind("train_mlp: error: ", 0), 0u) << r.err;
    } else if (r.code == 0) {
      ++zero;
    }
  }
  std::printf("[ fuzz     ] %d train_mlp runs: %d exit 0, %d exit 2\n", kRuns, zero, two);
  ::testing::Test::RecordProperty("train_mlp_runs", kRuns);
  EXPECT_GT(zero, 3);
  EXPECT_GT(two, 10);
}

}  // namespace
}  // namespace amlp
