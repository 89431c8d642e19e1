// parse_json_or_discarded and accept_json read with RapidJSON: differential checks against nlohmann's
// own json::parse / json::accept, which they disagree with only on the documented refusals.
#include "shared/json_util.h"

#include <doctest/doctest.h>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

namespace ss {

namespace {

// Equal values of equal types all the way down (json's operator== calls 1, 1u and 1.0 equal; the
// reader must give nlohmann's exact number types, and -0.0 apart from 0.0).
bool rj_same(const json& a, const json& b) {
  if (a.type() != b.type()) return false;
  if (a.is_object()) {
    if (a.size() != b.size()) return false;
    for (auto it = a.begin(), jt = b.begin(); it != a.end(); ++it, ++jt) {
      if (it.key() != jt.key() || !rj_same(it.value(), jt.value())) return false;
    }
    return true;
  }
  if (a.is_array()) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (!rj_same(a[i], b[i])) return false;
    }
    return true;
  }
  if (a.is_number_float()) {
    const double x = a.get<double>();
    const double y = b.get<double>();
    return std::memcmp(&x, &y, sizeof x) == 0;
  }
  return a == b;
}

// The refusals of a text nlohmann reads that parse_json_or_discarded may make (shared/json_util.h):
// a number RapidJSON calls too big, nesting deeper than 256 levels.
bool rj_documented_refusal(const std::string& text, const json& reference) {
  std::string_view body = text;
  if (body.substr(0, 3) == "\xEF\xBB\xBF") body.remove_prefix(3);
  return rapid_json_number_too_big(body) || !depth_within(reference, 256);
}

// What callers see is nlohmann's verdict and value, but for the documented refusals; RapidJSON's
// acceptance implies nlohmann's, with the same value. Returns whether RapidJSON took the text.
bool rj_agrees(const std::string& text) {
  CAPTURE(text);
  const json reference = json::parse(text, nullptr, /*allow_exceptions=*/false);
  const bool reference_ok = !reference.is_discarded();
  json fast;
  const bool fast_ok = rapid_json_parse(text, fast);
  if (fast_ok) {
    REQUIRE(reference_ok);
    CHECK(rj_same(fast, reference));
  }
  CHECK(rapid_json_accept(text) == fast_ok);  // the same checks, nothing built
  json kept;
  CHECK(rapid_json_parse_numbers_as_text(text, kept) ==
        fast_ok);  // the same verdict, numbers as text
  const json combined = parse_json_or_discarded(text);
  if (reference_ok && combined.is_discarded()) {
    CHECK(rj_documented_refusal(text, reference));
  } else {
    CHECK(combined.is_discarded() == !reference_ok);
    if (reference_ok) CHECK(rj_same(combined, reference));
  }
  CHECK(nlohmann_parse_or_discarded(text).is_discarded() == !reference_ok);
  CHECK(accept_json(text) == !combined.is_discarded());
  return fast_ok;
}

json rj_random_value(std::mt19937& rng, int depth) {
  std::uniform_int_distribution<int> kind(0, depth > 4 ? 6 : 9);
  static const std::vector<std::string> kStrings = {"",
                                                    "a",
                                                    "tenant-1",
                                                    "quote\" back\\slash",
                                                    "tab\tline\nfeed",
                                                    "é ü ß",
                                                    "€ 中文",
                                                    "emoji 😀",
                                                    std::string("nul\0in", 6),
                                                    "\x7f",
                                                    "ctl\x01\x1f",
                                                    "한국어 \xed\x9f\xbf",
                                                    "/slash"};
  switch (kind(rng)) {
    case 0:
      return nullptr;
    case 1:
      return rng() % 2 == 0;
    case 2:
      return static_cast<std::int64_t>(rng()) - (1LL << 31);
    case 3:
      return static_cast<std::uint64_t>(rng()) << 32 | rng();
    case 4:
      return -static_cast<std::int64_t>(static_cast<std::uint64_t>(rng()) << 31 | rng());
    case 5: {
      std::uint64_t bits = static_cast<std::uint64_t>(rng()) << 32 | rng();
      double d;
      std::memcpy(&d, &bits, sizeof d);
      if (!std::isfinite(d)) d = 0.5;
      return d;
    }
    case 6:
      return kStrings[rng() % kStrings.size()];
    case 7:
      return static_cast<double>(static_cast<std::int32_t>(rng())) / 1024.0;
    case 8: {
      json a = json::array();
      for (int i = static_cast<int>(rng() % 5); i > 0; --i)
        a.push_back(rj_random_value(rng, depth + 1));
      return a;
    }
    default: {
      json o = json::object();
      for (int i = static_cast<int>(rng() % 5); i > 0; --i) {
        o[kStrings[rng() % kStrings.size()] + std::to_string(i)] = rj_random_value(rng, depth + 1);
      }
      return o;
    }
  }
}

// A number's text from random pieces: sign, integer digits, fraction, exponent (valid or not).
std::string rj_random_number(std::mt19937& rng) {
  static const char* const kDigits = "0123456789";
  std::string out;
  if (rng() % 3 == 0) out += '-';
  const int int_digits = static_cast<int>(rng() % 4 == 0 ? rng() % 40 : rng() % 21);
  for (int i = 0; i < int_digits; ++i) out += kDigits[rng() % 10];
  if (int_digits == 0 && rng() % 4 != 0) out += '0';
  if (rng() % 2 == 0) {
    out += '.';
    const int frac = static_cast<int>(rng() % 25);
    for (int i = 0; i < frac; ++i) out += kDigits[rng() % 10];
  }
  if (rng() % 2 == 0) {
    out += rng() % 2 == 0 ? 'e' : 'E';
    if (rng() % 2 == 0) out += rng() % 2 == 0 ? '-' : '+';
    const int exp = static_cast<int>(rng() % 4);
    for (int i = 0; i < exp; ++i) out += kDigits[rng() % 10];
  }
  return out;
}

}  // namespace

TEST_CASE("parse_json_or_discarded and accept_json give nlohmann's verdicts, values and types") {
  static const std::vector<std::string> kCases = {"0",
                                                  "-0",
                                                  "-0.0",
                                                  "1",
                                                  "-1",
                                                  "0.5",
                                                  "1e2",
                                                  "1E+2",
                                                  "1e-2",
                                                  "-1.25e-3",
                                                  "01",
                                                  "-01",
                                                  "-",
                                                  "1.",
                                                  ".5",
                                                  "1e",
                                                  "1e+",
                                                  "+1",
                                                  "--1",
                                                  "0x10",
                                                  "18446744073709551615",
                                                  "18446744073709551616",
                                                  "-9223372036854775808",
                                                  "-9223372036854775809",
                                                  "9223372036854775807",
                                                  "9223372036854775808",
                                                  "4294967295",
                                                  "4294967296",
                                                  "-2147483648",
                                                  "-2147483649",
                                                  "1e400",
                                                  "-1e400",
                                                  "1e309",
                                                  "1.7976931348623157e308",
                                                  "1.7976931348623158e308",
                                                  "1.7976931348623159e308",
                                                  "4.9e-324",
                                                  "2.4e-324",
                                                  "2.5e-324",
                                                  "1e-400",
                                                  "-1e-400",
                                                  "0e400",
                                                  "-0e999",
                                                  "0.0e1000000",
                                                  "0E-99999999999",
                                                  "10e308",
                                                  "0.1e309",
                                                  "1" + std::string(400, '0') + "e-300",
                                                  "1" + std::string(400, '0'),
                                                  "0." + std::string(400, '0') + "1e700",
                                                  "2.2250738585072011e-308",
                                                  "2.2250738585072012e-308",
                                                  "9007199254740993",
                                                  "9007199254740993.0",
                                                  "0.1000000000000000055511151231257827",
                                                  "123456789012345678901234567890",
                                                  "123456789012345678901234567890e-10",
                                                  "NaN",
                                                  "Infinity",
                                                  "-Infinity",
                                                  "true",
                                                  "false",
                                                  "null",
                                                  "tru",
                                                  "nul",
                                                  "True",
                                                  "nulll",
                                                  "\"\"",
                                                  "\"a\\u0041\"",
                                                  "\"\\u00e9\"",
                                                  "\"\\ud83d\\ude00\"",
                                                  "\"\\ud83d\"",
                                                  "\"\\ude00\"",
                                                  "\"\\udc00\"",
                                                  "\"a\\udfffb\"",
                                                  "{\"\\udc00\":1}",
                                                  "\"\\ud83dx\"",
                                                  "\"\\ud83d\\u0041\"",
                                                  "\"\\u12\"",
                                                  "\"\\u12g4\"",
                                                  "\"\\x\"",
                                                  "\"\\/\\b\\f\\n\\r\\t\\\"\\\\\"",
                                                  "\"\\u0000\"",
                                                  "\"a\tb\"",
                                                  "\"\x7f\"",
                                                  "\"\xc3\xa9\"",
                                                  "\"\xc3\"",
                                                  "\"\xc0\x80\"",
                                                  "\"\xc1\xbf\"",
                                                  "\"\xed\x9f\xbf\"",
                                                  "\"\xed\xa0\x80\"",
                                                  "\"\xed\xbf\xbf\"",
                                                  "\"\xee\x80\x80\"",
                                                  "\"\xf4\x8f\xbf\xbf\"",
                                                  "\"\xf4\x90\x80\x80\"",
                                                  "\"\xf0\x9f\x98\x80\"",
                                                  "\"\xe0\x80\x80\"",
                                                  "\"\xf0\x80\x80\x80\"",
                                                  "\"\xf5\x80\x80\x80\"",
                                                  "\"\xff\"",
                                                  "\"\x80\"",
                                                  "\"unterminated",
                                                  "\"a\\",
                                                  "[]",
                                                  "{}",
                                                  "[1,]",
                                                  "[,1]",
                                                  "{\"a\":1,}",
                                                  "{\"a\" 1}",
                                                  "{1:2}",
                                                  "{\"a\":1,\"a\":2}",
                                                  "{\"b\":{\"c\":[1]},\"b\":3}",
                                                  "{\"b\":3,\"b\":{\"c\":[1]}}",
                                                  " \t\r\n[ 1 , 2 ] \n",
                                                  "\f[1]",
                                                  "[1]\v",
                                                  "[1] x",
                                                  "[1][2]",
                                                  "",
                                                  " ",
                                                  "\xef\xbb\xbf[1]",
                                                  "\xef\xbb\xbf",
                                                  "\xef\xbb[1]",
                                                  " \xef\xbb\xbf[1]",
                                                  "[1 2]",
                                                  "{\"a\":[true,false,null,{\"b\":\"c\"}]}",
                                                  std::string("[1]\0", 4),
                                                  std::string("[1]\0x", 5),
                                                  std::string("[1] \0 x", 7),
                                                  std::string("\0", 1),
                                                  std::string("[\0]", 3),
                                                  std::string("\"a\0b\"", 5),
                                                  std::string("{\"a\":\0}", 7),
                                                  std::string(" \0", 2),
                                                  std::string(60, '[') + std::string(60, ']'),
                                                  std::string(100, '[') + std::string(99, ']'),
                                                  std::string(300, '[') + std::string(300, ']'),
                                                  std::string(300, '[') + std::string(299, ']'),
                                                  [] {
                                                    std::string deep;
                                                    for (int i = 0; i < 400; ++i) deep += "{\"k\":";
                                                    deep += "1";
                                                    for (int i = 0; i < 400; ++i) deep += "}";
                                                    return deep;
                                                  }(),
                                                  "[" + std::string(70, ' ') + "]",
                                                  "[\"\\u0000\\u001f\", \"\\u007f\"]"};
  for (const std::string& text : kCases) rj_agrees(text);
}

TEST_CASE("what the reader refuses that nlohmann would read, and what it reads as nlohmann does") {
  for (const std::string& refused : {std::string("0e400"), std::string("[-0e999]"),
                                     std::string("1") + std::string(400, '0') + "e-300",
                                     std::string(300, '[') + std::string(300, ']')}) {
    CAPTURE(refused);
    CHECK_FALSE(json::parse(refused, nullptr, false).is_discarded());  // nlohmann reads it
    CHECK(parse_json_or_discarded(refused).is_discarded());
    CHECK_FALSE(accept_json(refused));
  }
  CHECK(parse_json_or_discarded("\xef\xbb\xbf[1]") ==
        json::array({1}));  // a leading BOM is skipped
  CHECK(parse_json_or_discarded(std::string(256, '[') + std::string(256, ']')).is_array());
  CHECK(parse_json_or_discarded("1e400").is_discarded());        // not finite: refused by both
  CHECK(parse_json_or_discarded("\"\\udc00\"").is_discarded());  // a lone low surrogate: both
}

TEST_CASE("parse_json refuses a raw NUL byte, which both readers take for the end of the text") {
  for (const std::string& text : {std::string("{\"a\":1}\0junk", 12), std::string("{\"a\":1}\0", 8),
                                  std::string("[\0]", 3)}) {
    CAPTURE(text);
    auto parsed = parse_json(text);
    REQUIRE_FALSE(parsed);
    CHECK(parsed.error().code == ErrorCode::invalid_json);
  }
  CHECK(parse_json("{\"a\":\"\\u0000\"}")->at("a") == std::string(1, '\0'));  // escaped: fine
}

// Strings of any bytes, weighted towards what the writer treats apart: escapes, control characters,
// lead and continuation bytes of every UTF-8 class, sequences cut off and broken off.
std::string random_bytes(std::mt19937& rng) {
  static const std::string kInteresting =
      std::string("\"\\\b\f\n\r\t\x01\x1f\x7f a/", 14) +
      "\x80\xbf\xc0\xc1\xc2\xdf\xe0\xe1\xec\xed\xee\xef\xf0\xf1\xf3\xf4\xf5\xff\x9f\xa0\x8f\x90";
  std::string out;
  for (int i = static_cast<int>(rng() % 24); i > 0; --i) {
    out +=
        rng() % 3 == 0 ? static_cast<char>(rng() % 256) : kInteresting[rng() % kInteresting.size()];
  }
  return out;
}

TEST_CASE("dump_json writes what nlohmann's serializer writes, byte for byte") {
  std::vector<json> cases = {nullptr,
                             true,
                             false,
                             0,
                             -1,
                             1u,
                             json(INT64_MIN),
                             json(INT64_MAX),
                             json(UINT64_MAX),
                             0.0,
                             -0.0,
                             1.0,
                             0.1,
                             -2.5e-300,
                             1e300,
                             5e-324,
                             1.7976931348623157e308,
                             123456789.125,
                             1e21,
                             1e-7,
                             std::nan(""),
                             INFINITY,
                             -INFINITY,
                             "",
                             "plain",
                             "\"quoted\" and \\back\\slash",
                             std::string("\0\x01\x08\x09\x0a\x0b\x0c\x0d\x1f\x20\x7f", 11),
                             "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
                             "\xc3",
                             "\xe2\x82",
                             "\xf0\x9f\x98",
                             "\xc3\x41",
                             "\xe2\x41\x82",
                             "\xe0\x80\x80",
                             "\xe0\xa0\x80",
                             "\xed\x9f\xbf",
                             "\xed\xa0\x80",
                             "\xf0\x8f\xbf\xbf",
                             "\xf0\x90\x80\x80",
                             "\xf4\x8f\xbf\xbf",
                             "\xf4\x90\x80\x80",
                             "\xf5\x80",
                             "\xc0\x80",
                             "\xc1\xbf",
                             "\x80",
                             "\xbf\xbf",
                             "\xff\xfe",
                             "a\xe2\x82\"b",
                             "\xe2\x82\xe2\x82\xac",
                             "\xf0\x9f\x98\x80\xf0",
                             json::array(),
                             json::object(),
                             json::array({1, "two", 3.5, nullptr, json::array({json::object()})}),
                             json::parse(R"({"b":{"c":[1,2,{"d":"e"}]},"a":"\u0000","":[]})"),
                             json::binary({1, 2, 255}),
                             json::binary({}, 7),
                             json::binary({0}),
                             json(json::value_t::discarded)};
  json odd_keys = json::object();
  odd_keys["\xff key"] = 1;
  odd_keys["tab\tkey"] = "\xe2\x82";
  cases.push_back(odd_keys);
  for (int b = 0; b < 256; ++b) {
    cases.emplace_back(std::string(1, static_cast<char>(b)));
    cases.emplace_back("x" + std::string(1, static_cast<char>(b)) + "\x80y");
  }
  std::mt19937 rng(20261202);  // fixed: a failure is reproducible
  for (int n = 0; n < 3000; ++n) cases.emplace_back(random_bytes(rng));
  for (int n = 0; n < 600; ++n) cases.push_back(rj_random_value(rng, 0));
  for (int n = 0; n < 200; ++n) {
    json o = json::object();
    for (int i = 0; i < 4; ++i)
      o[random_bytes(rng)] = json::array({random_bytes(rng), rj_random_value(rng, 2)});
    cases.push_back(o);
  }
  for (const json& value : cases) {
    const std::string reference = nlohmann_dump(value);
    CAPTURE(reference);
    CHECK(dump_json(value) == reference);
  }
  // Well-formed input passes through; U+FFFD stands where the bytes were ill-formed.
  CHECK(dump_json("caf\xc3\xa9") == "\"caf\xc3\xa9\"");
  CHECK(dump_json("a\xffz") == "\"a\xef\xbf\xbdz\"");
  CHECK(dump_json("a\xe2\x82") == "\"a\xef\xbf\xbd\"");
  CHECK(dump_json("\x01\n") == "\"\\u0001\\n\"");
  std::string appended = "x=";
  append_json_string(appended, "a\"b");
  CHECK(appended == "x=\"a\\\"b\"");
}

TEST_CASE("json_object builds what nlohmann's initializer list builds, with values moved in") {
  const std::string id = "t-1";
  CHECK(json_object({{"ok", true}, {"id", id}, {"n", 3}, {"list", json::array({1, 2})}}) ==
        json{{"ok", true}, {"id", id}, {"n", 3}, {"list", json::array({1, 2})}});
  CHECK(json_object({{"nested", {{"a", 1}}}, {"pair", {1, 2}}}) ==
        json{{"nested", {{"a", 1}}}, {"pair", {1, 2}}});
  CHECK(json_object({{"k", 1}, {"k", 2}}) == json{{"k", 1}, {"k", 2}});  // the first wins in both
  CHECK(json_object({{"k", 1}, {"k", 2}})["k"] == 1);
  CHECK(json_object({}) == json::object());
  json big = json::array({std::string(1000, 'x')});
  json built = json_object({{"body", std::move(big)}});
  CHECK(built["body"][0].get_ref<const std::string&>().size() == 1000);
  CHECK(big.is_null());  // moved from, not copied
}

TEST_CASE("RapidJSON itself reads every text dump_json writes (the fast path is taken)") {
  std::mt19937 rng(20261201);  // fixed: a failure is reproducible
  for (int n = 0; n < 400; ++n) {
    const json doc = rj_random_value(rng, 0);
    const std::string text = dump_json(doc);
    CHECK(rj_agrees(text));
    CHECK(rj_agrees(doc.dump(2)));  // with whitespace
    CHECK(rapid_json_accept(text));
  }
}

TEST_CASE("RapidJSON and nlohmann agree on random documents, their mutations and random numbers") {
  std::mt19937 rng(12345);
  int fast = 0;
  int total = 0;
  for (int n = 0; n < 600; ++n) {
    const std::string text = dump_json(rj_random_value(rng, 0));
    for (int m = 0; m < 8 && !text.empty(); ++m) {
      std::string mutated = text;
      const std::size_t at = rng() % mutated.size();
      switch (rng() % 4) {
        case 0:
          mutated[at] = static_cast<char>(rng() % 256);
          break;
        case 1:
          mutated.erase(at, 1);
          break;
        case 2:
          mutated.insert(at, 1, "\\\"{}[],:0-.eE \x01\xed\xc3"[rng() % 17]);
          break;
        default:
          mutated.resize(at);
          break;
      }
      fast += rj_agrees(mutated) ? 1 : 0;
      ++total;
    }
  }
  for (int n = 0; n < 3000; ++n) {
    const std::string number = rj_random_number(rng);
    fast += rj_agrees(number) ? 1 : 0;
    rj_agrees("[" + number + "]");
    total += 2;
  }
  MESSAGE("RapidJSON took ", fast, " of ", total, " texts itself");
}

TEST_CASE("RapidJSON and nlohmann agree on the json fuzzer's corpus") {
  const std::filesystem::path dir = std::filesystem::path(SS_SOURCE_DIR) / "tests/fuzz/corpus/json";
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::ifstream in(entry.path(), std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    rj_agrees(text);
    ++files;
  }
  CHECK(files > 0);
}

TEST_CASE("a D1 result message the way the runtime receives it takes the fast path") {
  const std::string text =
      R"({"now":1764426000000,"results":[{"id":3,"ok":true,"value":{"columns":["seq","payload_json"],)"
      R"("rows":[[1,"{\"a\":1}"],[2,null],[-3,"x"]]}}]})";
  json out;
  REQUIRE(rapid_json_parse(text, out));
  CHECK(out["now"].is_number_unsigned());
  CHECK(out["results"][0]["value"]["rows"][0][1] == "{\"a\":1}");
  CHECK(out["results"][0]["value"]["rows"][1][1].is_null());
  CHECK(out["results"][0]["value"]["rows"][2][0].is_number_integer());
  CHECK(!out["results"][0]["value"]["rows"][2][0].is_number_unsigned());
  rj_agrees(text);
}

TEST_CASE("json: an object read keeping its numbers holds each number's own spelling") {
  auto kept = parse_json_object_keeping_numbers(
      R"({"a":1.50,"b":1E+2,"c":-0,"d":1000000000000000000000,"e":7,"f":"1.50","g":true,"h":[2.0]})");
  REQUIRE(kept);
  CHECK(*kept == json{{"a", "1.50"},
                      {"b", "1E+2"},
                      {"c", "-0"},
                      {"d", "1000000000000000000000"},
                      {"e", "7"},
                      {"f", "1.50"},
                      {"g", true},
                      {"h", json::array({"2.0"})}});
  // Refused as parse_json_object refuses: malformed, a number out of range, too deep, not an object.
  for (const std::string& bad : std::vector<std::string>{
           "{\"a\":1.}", "{\"a\":1e400}", "[1]", std::string(70, '[') + std::string(70, ']'),
           std::string("{\"a\":1}\0", 8)}) {
    CAPTURE(bad);
    auto reference = parse_json_object(bad);
    auto got = parse_json_object_keeping_numbers(bad);
    REQUIRE(!reference);
    REQUIRE(!got);
    CHECK(got.error().code == reference.error().code);
    CHECK(got.error().message == reference.error().message);
  }
}

}  // namespace ss
