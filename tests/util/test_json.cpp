// Covers framework/util/json.cpp (framework/json.h): the JSON value the
// programs write and the tests read. Its text is nlohmann-json's, byte for
// byte (the files the docs quote and the fixtures hold were written by it);
// what it parses is what nlohmann's strict parser takes, less a key given
// twice and nesting past Json::kMaxDepth, each refused with one line.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "framework/json.h"

namespace {

using amlp::Json;

TEST(Json, BracesMakeAnObjectOfPairsElseAnArray) {
  const Json o = {{"a", 1}, {"b", "x"}};
  EXPECT_TRUE(o.is_object());
  EXPECT_EQ(o.dump(), R"({"a":1,"b":"x"})");
  const Json a = {1, "x", nullptr};
  EXPECT_TRUE(a.is_array());
  EXPECT_EQ(a.dump(), R"([1,"x",null])");
  const Json not_pairs = {{"a", 1}, {2, 3}};  // a pair whose first is not a string: an array of arrays
  EXPECT_EQ(not_pairs.dump(), R"([["a",1],[2,3]])");
  EXPECT_EQ(Json(std::vector<int64_t>{3, -4}).dump(), "[3,-4]");
  EXPECT_EQ(Json::array().dump(), "[]");
  EXPECT_EQ(Json::object().dump(), "{}");
  EXPECT_EQ(Json().dump(), "null");
}

TEST(Json, KeysKeepTheirOrderAndPrettyTextIsNlohmannsDump2) {
  Json run = Json::object();
  run["zeta"] = 1;
  run["alpha"] = Json::array({0.25, nullptr});
  run["mid"] = {{"k", true}};
  EXPECT_EQ(run.dump(2), "{\n  \"zeta\": 1,\n  \"alpha\": [\n    0.25,\n    null\n  ],\n  \"mid\": {\n    \"k\": true\n  }\n}");
  std::vector<std::string> keys;
  for (const auto& [k, v] : run.items()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"zeta", "alpha", "mid"}));
}

TEST(Json, NumbersPrintAsNlohmannPrintsThem) {
  EXPECT_EQ(Json(100.0).dump(), "100.0");
  EXPECT_EQ(Json(0.1).dump(), "0.1");
  EXPECT_EQ(Json(1e-7).dump(), "1e-07");
  EXPECT_EQ(Json(1e300).dump(), "1e+300");
  EXPECT_EQ(Json(-0.0).dump(), "-0.0");
  EXPECT_EQ(Json(std::numeric_limits<uint64_t>::max()).dump(), "18446744073709551615");
  EXPECT_EQ(Json(std::numeric_limits<int64_t>::min()).dump(), "-9223372036854775808");
  EXPECT_EQ(Json(std::numeric_limits<double>::quiet_NaN()).dump(), "null");
}

TEST(Json, TextThatIsNotUtf8IsWrittenWithTheReplacementCharacter) {
  EXPECT_EQ(Json(std::string("a\xff" "b")).dump(), "\"a\xEF\xBF\xBD" "b\"");
  EXPECT_EQ(Json("tab\there \"q\" \\").dump(), R"("tab\there \"q\" \\")");
}

TEST(Json, ParsedNumbersAreUnsignedSignedOrDoubleAndCompareByValue) {
  const Json j = Json::parse(R"({"u": 3, "i": -3, "d": 3.0, "big": 18446744073709551615, "e": 1e2})");
  EXPECT_TRUE(j.at("u").is_number_unsigned());
  EXPECT_TRUE(j.at("i").is_number_integer() && !j.at("i").is_number_unsigned());
  EXPECT_TRUE(j.at("d").is_number_float());
  EXPECT_EQ(j.at("big").get<uint64_t>(), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(j.at("u"), 3);
  EXPECT_EQ(j.at("u"), 3.0);
  EXPECT_EQ(j.at("d"), j.at("u"));
  EXPECT_NE(j.at("i"), j.at("u"));
  EXPECT_EQ(j.at("e").get<int>(), 100);
  EXPECT_EQ(j.at("i").get<double>(), -3.0);
}

TEST(Json, ARoundTripGivesTheSameValueAndText) {
  const Json v = {{"s", "caf\xC3\xA9 \xE2\x9C\x93"}, {"n", {1, -2, 2.5, 1e-300}}, {"b", false}, {"z", nullptr},
                  {"o", {{"deep", {{"er", Json::array()}}}}}};
  const Json back = Json::parse(v.dump(2));
  EXPECT_EQ(back, v);
  EXPECT_EQ(back.dump(), v.dump());
}

TEST(Json, ObjectsAreEqualWhateverTheirKeysOrder) {
  EXPECT_EQ(Json::parse(R"({"a":1,"b":[2]})"), Json::parse(R"({"b":[2],"a":1})"));
  EXPECT_NE(Json::parse(R"({"a":1})"), Json::parse(R"({"a":1,"b":2})"));
  EXPECT_NE(Json::parse("[1,2]"), Json::parse("[2,1]"));
  EXPECT_NE(Json("1"), Json(1));
}

TEST(Json, WhatIsNotJsonIsAParseErrorSayingWhere) {
  for (const char* bad : {"", "[1,", "nul", "[1] x", "{\"a\" 1}", "'a'", "[1,]", "01", "\"\xff\"", "NaN"}) {
    SCOPED_TRACE(bad);
    EXPECT_THROW(Json::parse(bad), Json::parse_error);
  }
  try {
    Json::parse("[1, 2, x]");
    FAIL() << "parsed";
  } catch (const Json::parse_error& e) {
    EXPECT_EQ(e.byte, 8u);
    EXPECT_NE(std::string(e.what()).find("line 1, column 8"), std::string::npos) << e.what();
  }
}

TEST(Json, AKeyGivenTwiceIsRefusedNamingTheKey) {
  try {
    Json::parse(R"({"t": {"dtype": "F32", "dtype": "F16"}})");
    FAIL() << "parsed";
  } catch (const Json::parse_error& e) {
    EXPECT_EQ(e.key_twice, "dtype");
    EXPECT_NE(std::string(e.what()).find("\"dtype\" is given twice"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(Json::parse(R"([{"a": 1}, {"a": 2}])"));  // the same key in two objects
}

TEST(Json, NestingIsTakenToTheLimitAndRefusedPastIt) {
  const int n = Json::kMaxDepth;
  EXPECT_NO_THROW(Json::parse(std::string(n, '[') + std::string(n, ']')));
  // Far past it (a hostile header): refused at the limit, never a stack overflow.
  for (const size_t deep : {size_t(n) + 1, size_t(1) << 20}) {
    SCOPED_TRACE(deep);
    try {
      Json::parse(std::string(deep, '[') + std::string(deep, ']'));
      FAIL() << "parsed";
    } catch (const Json::parse_error& e) {
      EXPECT_NE(std::string(e.what()).find("nested more than 512 deep"), std::string::npos) << e.what();
    }
  }
}

TEST(Json, AccessorsThrowOneLineOnTheWrongKindOrAMissingKey) {
  Json j = Json::parse(R"({"a": [1, 2], "s": "x"})");
  EXPECT_THROW(j.at("none"), Json::out_of_range);
  EXPECT_THROW(static_cast<const Json&>(j)["none"], Json::out_of_range);
  EXPECT_THROW(j.at("a").at(2), Json::out_of_range);
  EXPECT_THROW(j.at("s").get<double>(), Json::type_error);
  EXPECT_THROW(j.at("a").get<std::string>(), Json::type_error);
  EXPECT_THROW(j.at("s").push_back(1), Json::type_error);
  EXPECT_THROW(j.at("a")["k"], Json::type_error);
  try {
    j.at("none");
  } catch (const Json::error& e) {
    EXPECT_STREQ(e.what(), "JSON: no key \"none\"");
  }
  EXPECT_EQ(j.value("none", 7), 7);
  EXPECT_EQ(j.value("s", "fallback"), "x");
  EXPECT_TRUE(j.contains("a") && !j.contains("none") && j.count("a") == 1);
  EXPECT_EQ(j.at("a").get<std::vector<int>>(), (std::vector<int>{1, 2}));
  EXPECT_EQ(j.size(), 2u);
  j.erase("a");
  EXPECT_EQ(j.dump(), R"({"s":"x"})");
}

TEST(Json, WritingThroughANullMakesTheContainerTheCallNeeds) {
  Json o;
  o["k"]["inner"] = 1;
  EXPECT_EQ(o.dump(), R"({"k":{"inner":1}})");
  Json a;
  a.push_back(1);
  a.emplace_back("two");
  EXPECT_EQ(a.dump(), R"([1,"two"])");
  EXPECT_EQ(a.back(), "two");
  EXPECT_EQ(a.front(), 1);
}

}  // namespace
