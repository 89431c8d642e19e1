#include "shared/json_reader.h"

#include "shared/json_util.h"

#include <doctest/doctest.h>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace ss {

namespace {

// Equal values of equal types all the way down (json's operator== calls 1 and 1u and 1.0 equal;
// the fast reader must give nlohmann's exact number types).
bool same(const json& a, const json& b) {
  if (a.type() != b.type()) return false;
  if (a.is_object()) {
    if (a.size() != b.size()) return false;
    for (auto it = a.begin(), jt = b.begin(); it != a.end(); ++it, ++jt) {
      if (it.key() != jt.key() || !same(it.value(), jt.value())) return false;
    }
    return true;
  }
  if (a.is_array()) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (!same(a[i], b[i])) return false;
    }
    return true;
  }
  if (a.is_number_float()) {
    const double x = a.get<double>();
    const double y = b.get<double>();
    return std::memcmp(&x, &y, sizeof x) == 0;  // -0.0 and 0.0 apart
  }
  return a == b;
}

// The reader either agrees with nlohmann exactly or gives up; parse_json_or_discarded always agrees.
void agrees(const std::string& text) {
  CAPTURE(text);
  json reference = json::parse(text, nullptr, /*allow_exceptions=*/false);
  json fast;
  if (read_json_fast(text, fast)) {
    REQUIRE(!reference.is_discarded());
    CHECK(same(fast, reference));
  }
  if (accept_json_fast(text)) CHECK(!reference.is_discarded());
  CHECK(accept_json_fast(text) == read_json_fast(text, fast));  // the same checks, nothing built
  json combined = parse_json_or_discarded(text);
  CHECK(combined.is_discarded() == reference.is_discarded());
  if (!reference.is_discarded()) CHECK(same(combined, reference));
}

json random_value(std::mt19937& rng, int depth) {
  std::uniform_int_distribution<int> kind(0, depth > 4 ? 5 : 8);
  static const std::vector<std::string> kStrings = {
      "",           "a",      "tenant-1", "quote\" back\\slash",     "tab\tline\nfeed",
      "é ü ß",      "€ 中文", "emoji 😀",  std::string("nul\0in", 6), "\x7f",
      "ctl\x01\x1f"};
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
      return static_cast<double>(static_cast<std::int32_t>(rng())) / 1024.0;
    case 5:
      return kStrings[rng() % kStrings.size()];
    case 6: {
      json a = json::array();
      for (int i = static_cast<int>(rng() % 5); i > 0; --i)
        a.push_back(random_value(rng, depth + 1));
      return a;
    }
    default: {
      json o = json::object();
      for (int i = static_cast<int>(rng() % 5); i > 0; --i) {
        o[kStrings[rng() % kStrings.size()] + std::to_string(i)] = random_value(rng, depth + 1);
      }
      return o;
    }
  }
}

}  // namespace

TEST_CASE("the fast JSON reader gives nlohmann's values, types and verdicts on edge cases") {
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
                                                  "-",
                                                  "1.",
                                                  ".5",
                                                  "1e",
                                                  "+1",
                                                  "18446744073709551615",
                                                  "18446744073709551616",
                                                  "-9223372036854775808",
                                                  "-9223372036854775809",
                                                  "9223372036854775807",
                                                  "9223372036854775808",
                                                  "1e400",
                                                  "-1e400",
                                                  "123456789012345678901234567890",
                                                  "0.1000000000000000055511151231257827",
                                                  "true",
                                                  "false",
                                                  "null",
                                                  "tru",
                                                  "nul",
                                                  "True",
                                                  "\"\"",
                                                  "\"a\\u0041\"",
                                                  "\"\\u00e9\"",
                                                  "\"\\ud83d\\ude00\"",
                                                  "\"\\ud83d\"",
                                                  "\"\\ude00\"",
                                                  "\"\\ud83dx\"",
                                                  "\"\\u12\"",
                                                  "\"\\x\"",
                                                  "\"\\/\\b\\f\\n\\r\\t\"",
                                                  "\"\\u0000\"",
                                                  "\"a\tb\"",
                                                  "\"\x7f\"",
                                                  "\"\xc3\xa9\"",
                                                  "\"\xc3\"",
                                                  "\"\xc0\x80\"",
                                                  "\"\xed\xa0\x80\"",
                                                  "\"\xf4\x90\x80\x80\"",
                                                  "\"\xf0\x9f\x98\x80\"",
                                                  "\"\xe0\x80\x80\"",
                                                  "\"\xff\"",
                                                  "\"unterminated",
                                                  "[]",
                                                  "{}",
                                                  "[1,]",
                                                  "[,1]",
                                                  "{\"a\":1,}",
                                                  "{\"a\" 1}",
                                                  "{1:2}",
                                                  "{\"a\":1,\"a\":2}",
                                                  "{\"b\":{\"c\":[1]},\"b\":3}",
                                                  " \t\r\n[ 1 , 2 ] \n",
                                                  "[1] x",
                                                  "[1][2]",
                                                  "",
                                                  " ",
                                                  "\xef\xbb\xbf[1]",
                                                  "[1 2]",
                                                  "{\"a\":[true,false,null,{\"b\":\"c\"}]}",
                                                  std::string(60, '[') + std::string(60, ']'),
                                                  std::string(100, '[') + std::string(99, ']'),
                                                  "[" + std::string(70, ' ') + "]"};
  for (const std::string& text : kCases) agrees(text);
}

TEST_CASE("the fast JSON reader agrees with nlohmann on random documents and their mutations") {
  std::mt19937 rng(12345);  // fixed: a failure is reproducible
  static constexpr int kDocuments = 400;
  static constexpr int kMutationsEach = 8;
  for (int n = 0; n < kDocuments; ++n) {
    json doc = random_value(rng, 0);
    std::string text = dump_json(doc);
    json fast;
    CHECK(read_json_fast(text, fast));  // whatever dump_json writes takes the fast path
    agrees(text);
    agrees(doc.dump(1));  // with whitespace
    for (int m = 0; m < kMutationsEach; ++m) {
      std::string mutated = text;
      if (mutated.empty()) break;
      std::size_t at = rng() % mutated.size();
      switch (rng() % 3) {
        case 0:
          mutated[at] = static_cast<char>(rng() % 256);
          break;
        case 1:
          mutated.erase(at, 1);
          break;
        default:
          mutated.resize(at);
          break;
      }
      agrees(mutated);
    }
  }
}

TEST_CASE("the fast JSON reader reads a D1 result message the way the runtime receives it") {
  std::string text =
      R"({"now":1764426000000,"results":[{"id":3,"ok":true,"value":{"columns":["seq","payload_json"],)"
      R"("rows":[[1,"{\"a\":1}"],[2,null]]}}]})";
  json out;
  REQUIRE(read_json_fast(text, out));
  CHECK(out["now"].is_number_unsigned());
  CHECK(out["results"][0]["value"]["rows"][0][1] == "{\"a\":1}");
  CHECK(out["results"][0]["value"]["rows"][1][1].is_null());
}

}  // namespace ss
