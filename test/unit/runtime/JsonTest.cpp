//===- JsonTest.cpp - weft::JsonValue, parseJson
//---------------------------===//

#include "weft/runtime/Json.h"

#include <cmath>
#include <gtest/gtest.h>
#include <string>

using weft::JsonValue;
using weft::parseJson;

namespace {

JsonValue parseOk(const std::string &text) {
  JsonValue v;
  std::string error;
  EXPECT_TRUE(parseJson(text, v, error)) << text << ": " << error;
  return v;
}

std::string parseError(const std::string &text) {
  JsonValue v;
  std::string error;
  EXPECT_FALSE(parseJson(text, v, error)) << text;
  return error;
}

TEST(Json, Scalars) {
  EXPECT_TRUE(parseOk("null").isNull());
  EXPECT_TRUE(parseOk(" true ").asBool());
  EXPECT_TRUE(parseOk("false").isBool());
  EXPECT_FALSE(parseOk("false").asBool());
  EXPECT_EQ(parseOk("\"hi\"").asString(), "hi");

  JsonValue i = parseOk("42");
  EXPECT_TRUE(i.isInteger());
  EXPECT_EQ(i.asInt(), 42);
  EXPECT_EQ(i.asDouble(), 42.0);

  JsonValue neg = parseOk("-7");
  EXPECT_EQ(neg.asInt(), -7);

  JsonValue d = parseOk("1.5");
  EXPECT_TRUE(d.isNumber());
  EXPECT_FALSE(d.isInteger());
  EXPECT_EQ(d.asDouble(), 1.5);

  // Integral values written with a fraction or exponent are integers too.
  EXPECT_TRUE(parseOk("2.0").isInteger());
  EXPECT_EQ(parseOk("1e3").asInt(), 1000);
  EXPECT_EQ(parseOk("-2.5E-1").asDouble(), -0.25);
}

TEST(Json, ExactIntegers) {
  // 2^53 + 1 is not representable as a double.
  JsonValue big = parseOk("9007199254740993");
  EXPECT_TRUE(big.isInteger());
  EXPECT_EQ(big.asInt(), 9007199254740993LL);
  EXPECT_EQ(big.dump(), "9007199254740993");

  EXPECT_EQ(parseOk("9223372036854775807").asInt(), INT64_MAX);
  EXPECT_EQ(parseOk("-9223372036854775808").asInt(), INT64_MIN);

  // Beyond int64: kept as a double only.
  JsonValue huge = parseOk("18446744073709551616");
  EXPECT_TRUE(huge.isNumber());
  EXPECT_FALSE(huge.isInteger());
  EXPECT_EQ(huge.asDouble(), 18446744073709551616.0);

  EXPECT_EQ(JsonValue::integer(-123).dump(), "-123");
  EXPECT_TRUE(JsonValue::number(3.0).isInteger());
  EXPECT_FALSE(JsonValue::number(3.25).isInteger());
}

TEST(Json, DoublesRoundTrip) {
  for (double d : {0.1, 1.0 / 3.0, 1e-300, 123456.789, -2.5e17, 6.02214076e23,
                   5e-324, 1.7976931348623157e308}) {
    std::string text = JsonValue::number(d).dump();
    JsonValue back = parseOk(text);
    EXPECT_EQ(back.asDouble(), d) << text;
  }
  EXPECT_EQ(JsonValue::number(0.1).dump(), "0.1");
  EXPECT_EQ(JsonValue::number(NAN).dump(), "null");
  EXPECT_EQ(JsonValue::number(INFINITY).dump(), "null");
}

TEST(Json, Strings) {
  EXPECT_EQ(parseOk(R"("a\"b\\c\/d\b\f\n\r\t")").asString(),
            "a\"b\\c/d\b\f\n\r\t");
  EXPECT_EQ(parseOk(R"("\u00e9")").asString(), "\xc3\xa9");
  EXPECT_EQ(parseOk(R"("\u20AC")").asString(), "\xe2\x82\xac");
  EXPECT_EQ(parseOk(R"("\ud83d\ude00")").asString(), "\xf0\x9f\x98\x80");
  EXPECT_EQ(parseOk("\"caf\xc3\xa9\"").asString(), "caf\xc3\xa9");

  JsonValue s = JsonValue::string(std::string("q\"\\\n\x01\x7f/\xc3\xa9", 9));
  EXPECT_EQ(s.dump(), "\"q\\\"\\\\\\n\\u0001\x7f/\xc3\xa9\"");
  EXPECT_EQ(parseOk(s.dump()), s);
  // An embedded NUL survives.
  JsonValue nul = JsonValue::string(std::string("a\0b", 3));
  EXPECT_EQ(nul.dump(), "\"a\\u0000b\"");
  EXPECT_EQ(parseOk(nul.dump()).asString(), std::string("a\0b", 3));
}

TEST(Json, ObjectsKeepOrder) {
  JsonValue v = parseOk(R"({"z": 1, "a": [1, 2, {"k": null}], "m": {}})");
  ASSERT_TRUE(v.isObject());
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v.keyAt(0), "z");
  EXPECT_EQ(v.keyAt(1), "a");
  EXPECT_EQ(v.keyAt(2), "m");
  EXPECT_EQ(v.get("a")->size(), 3u);
  EXPECT_TRUE(v.get("a")->at(2).get("k")->isNull());
  EXPECT_EQ(v.get("nope"), nullptr);
  EXPECT_EQ(v.dump(), R"({"z":1,"a":[1,2,{"k":null}],"m":{}})");

  // set() replaces in place; append() adds at the end.
  v.set("z", JsonValue::string("x"));
  v.set("new", JsonValue::boolean(true));
  EXPECT_EQ(v.dump(), R"({"z":"x","a":[1,2,{"k":null}],"m":{},"new":true})");

  JsonValue built;
  built.set("b", JsonValue::integer(1));
  built.append("a", JsonValue::array()).push(JsonValue::integer(2));
  EXPECT_EQ(built.dump(), R"({"b":1,"a":[2]})");
}

TEST(Json, Pretty) {
  JsonValue v =
      parseOk(R"({"name":"x","shape":[1,3],"nested":[{"a":1},[]],"empty":{}})");
  EXPECT_EQ(v.dump(true), "{\n"
                          "  \"name\": \"x\",\n"
                          "  \"shape\": [1, 3],\n"
                          "  \"nested\": [\n"
                          "    {\n"
                          "      \"a\": 1\n"
                          "    },\n"
                          "    []\n"
                          "  ],\n"
                          "  \"empty\": {}\n"
                          "}");
}

TEST(Json, RoundTrip) {
  const char *doc = R"({
    "format_version": 1, "arena_bytes": 123456789012, "ratio": 0.75,
    "params": [{"name": "fc.weight", "dtype": "f32", "shape": [10, 20]}],
    "flags": [true, false, null], "text": "tab\there \u2603",
    "deep": [[[[[]]]]], "neg": -0.5, "exp": 1.25e-7
  })";
  JsonValue v = parseOk(doc);
  EXPECT_EQ(parseOk(v.dump()), v);
  EXPECT_EQ(parseOk(v.dump(true)), v);
  EXPECT_EQ(parseOk(v.dump()).dump(), v.dump());
  EXPECT_NE(parseOk("[1,2]"), parseOk("[2,1]"));
  EXPECT_NE(parseOk(R"({"a":1,"b":2})"), parseOk(R"({"b":2,"a":1})"));
}

TEST(Json, ErrorsNameTheByteOffset) {
  EXPECT_EQ(parseError(""),
            "byte 0: unexpected end of input, expected a value");
  EXPECT_EQ(parseError("[1,2"),
            "byte 4: unexpected end of input, expected ',' or ']'");
  EXPECT_EQ(parseError("[1 2]"), "byte 3: unexpected '2', expected ',' or ']'");
  EXPECT_EQ(parseError(R"({"a":1,})"),
            "byte 7: unexpected '}', expected a member name in double quotes");
  EXPECT_EQ(parseError(R"({"a" 1})"),
            "byte 5: unexpected '1', expected ':' after a member name");
  EXPECT_EQ(parseError("[1]x"),
            "byte 3: unexpected trailing characters after the JSON value");
  EXPECT_EQ(parseError("01"),
            "byte 1: leading zeros are not allowed in numbers");
  EXPECT_EQ(parseError("  \"abc"), "byte 2: unterminated string");
  EXPECT_EQ(parseError(R"("a\x")"), "byte 3: invalid escape '\\x' in a string");
  EXPECT_EQ(parseError("tru"), "byte 0: invalid literal, expected 'true'");
  EXPECT_EQ(parseError(R"({"a":1,"a":2})"),
            "byte 7: duplicate member name \"a\"");
  EXPECT_EQ(parseError("\"a\nb\""),
            "byte 2: unescaped control character in a string");
  EXPECT_EQ(parseError(R"("\udc00")"),
            "byte 1: unpaired low surrogate in a \\u escape");
  EXPECT_EQ(parseError(R"("\ud800x")"),
            "byte 1: unpaired high surrogate in a \\u escape");
  EXPECT_EQ(parseError(R"("\u12G4")"),
            "byte 5: invalid hex digit in a \\u escape");
  EXPECT_EQ(parseError("1."),
            "byte 2: expected a digit after the decimal point");
  EXPECT_EQ(parseError("1e"), "byte 2: expected a digit in the exponent");
  EXPECT_EQ(parseError("-"), "byte 1: expected a digit");
  EXPECT_EQ(parseError("1e999"), "byte 0: number '1e999' is out of range");
  EXPECT_EQ(parseError("\"\xff\""), "byte 1: invalid UTF-8 in a string");
  EXPECT_EQ(parseError("\"\xc0\x80\""), "byte 1: invalid UTF-8 in a string");
  EXPECT_EQ(parseError("@"), "byte 0: unexpected '@', expected a value");
  EXPECT_EQ(parseError(std::string("[\x01]")),
            "byte 1: unexpected byte 0x01, expected a value");

  std::string deep(600, '[');
  deep += std::string(600, ']');
  EXPECT_EQ(parseError(deep), "byte 513: nesting deeper than 512 levels");
  std::string ok(500, '[');
  ok += std::string(500, ']');
  parseOk(ok);
}

TEST(Json, FailedParseLeavesOutputAlone) {
  JsonValue v = JsonValue::integer(5);
  std::string error;
  EXPECT_FALSE(parseJson("[1,", v, error));
  EXPECT_EQ(v.asInt(), 5);
}

} // namespace
