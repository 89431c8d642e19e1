#include "shared/text.h"
#include "shared/bytes.h"

#include <doctest/doctest.h>

namespace ss {

TEST_CASE("parse_decimal takes plain digits within bounds only") {
  CHECK(parse_decimal("0", 0, 10) == 0);
  CHECK(parse_decimal("007", 0, 10) == 7);
  CHECK(parse_decimal("200", 1, 200) == 200);
  CHECK(!parse_decimal("201", 1, 200));
  CHECK(!parse_decimal("0", 1, 200));
  for (const char* bad : {"", "-1", "+1", " 1", "1 ", "1e3", "0x10", "1.5", "١"}) {
    CAPTURE(bad);
    CHECK(!parse_decimal(bad, 0, 1000000));
  }
  CHECK(!parse_decimal("99999999999999999999999", 0, INT64_MAX));  // overflow is not a number
  CHECK(parse_decimal("9223372036854775807", 0, INT64_MAX) == INT64_MAX);
}

TEST_CASE("CharClass builds a byte set from ranges and lists") {
  constexpr CharClass ident = CharClass().range('a', 'z').range('0', '9').chars("-_");
  static_assert(ident.contains('a') && ident.contains('-') && !ident.contains('A'));
  CHECK(ident.all_of("abc-1_2"));
  CHECK(!ident.all_of("abc.1"));
  CHECK(ident.all_of(""));
  CHECK(!ident.contains('\xff'));
  CHECK(!kDigits.all_of("12a"));
}

TEST_CASE("constant_time_equal: equal only for the same bytes and length, whatever the lengths") {
  CHECK(ss::constant_time_equal("secret-token", "secret-token"));
  CHECK_FALSE(ss::constant_time_equal("secret-token", "secret-toke"));    // a prefix
  CHECK_FALSE(ss::constant_time_equal("secret-token", "secret-tokenx"));  // longer
  CHECK_FALSE(ss::constant_time_equal("abc", "abcabc"));                  // the secret, cycled
  CHECK_FALSE(ss::constant_time_equal("secret-token", "Secret-token"));
  CHECK_FALSE(ss::constant_time_equal("secret-token", ""));
  CHECK_FALSE(ss::constant_time_equal("", "x"));
  CHECK(ss::constant_time_equal("", ""));
  // A length that differs by a multiple of 2^8 (the low byte of the XOR of the lengths is 0).
  CHECK_FALSE(ss::constant_time_equal(std::string(1, 'a'), std::string(257, 'a')));
}

TEST_CASE("semver_major: Semantic Versioning 2.0.0 only") {
  CHECK(semver_major("1.2.0") == 1);
  CHECK(semver_major("0.0.0") == 0);
  CHECK(semver_major("10.20.30") == 10);
  CHECK(semver_major("1.0.0-beta") == 1);
  CHECK(semver_major("1.0.0-alpha.1") == 1);
  CHECK(semver_major("1.0.0-0.3.7") == 1);
  CHECK(semver_major("1.0.0-x-y-z.--") == 1);
  CHECK(semver_major("1.0.0+20130313144700") == 1);
  CHECK(semver_major("1.0.0-beta+exp.sha.5114f85") == 1);
  CHECK(semver_major("2.0.0") == 2);
  // Numbers of any length are semver; a major past int64 is one nobody speaks.
  CHECK(semver_major("1.99999999999999999999.0") == 1);
  CHECK(semver_major("1.0.0-99999999999999999999") == 1);
  CHECK(semver_major("99999999999999999999.0.0") == INT64_MAX);
  for (const char* bad :
       {"",          "1",           "1.0",    "1.x",    "1..0",          "1.0.",
        ".1.0",      "01.0.0",      "1.01.0", "1.0.01", "1.2.3.4",       "1.0.0garbage",
        "v1.2.0",    "-1.0.0",      "1.0.0-", "1.0.0+", "1.0.0-beta..1", "1.0.0-01",
        "1.0.0+a+b", "1.0.0-be ta", " 1.0.0", "1.0.0 ", "banana",        "1.0.0-00"}) {
    CAPTURE(bad);
    CHECK_FALSE(semver_major(bad).has_value());
  }
}

}  // namespace ss

TEST_CASE("is_utf8: well-formed UTF-8 only (Unicode table 3-7)") {
  CHECK(ss::is_utf8(""));
  CHECK(ss::is_utf8("plain ASCII \x7f"));
  CHECK(ss::is_utf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x8d\xb0 \xf4\x8f\xbf\xbf"));
  CHECK_FALSE(ss::is_utf8("\xe9"));              // Latin-1 é, a lone lead byte
  CHECK_FALSE(ss::is_utf8("\x80"));              // a continuation byte alone
  CHECK_FALSE(ss::is_utf8("\xc0\xaf"));          // overlong '/'
  CHECK_FALSE(ss::is_utf8("\xe0\x80\xaf"));      // overlong, three bytes
  CHECK_FALSE(ss::is_utf8("\xed\xa0\x80"));      // a surrogate (U+D800)
  CHECK_FALSE(ss::is_utf8("\xf4\x90\x80\x80"));  // past U+10FFFF
  CHECK_FALSE(ss::is_utf8("\xf5\x80\x80\x80"));  // not a lead byte
  CHECK_FALSE(ss::is_utf8("ok \xe2\x82"));       // cut off by the end
  CHECK_FALSE(ss::is_utf8("\xe2\x28\xa1"));      // broken off by ASCII
}

TEST_CASE("has_control_chars: C0, DEL and C1; newlines and tabs only when allowed") {
  for (bool allow : {false, true}) {
    CAPTURE(allow);
    CHECK(!ss::has_control_chars("Fresh bread, caf\xc3\xa9 \xe2\x82\xac 3", allow));
    CHECK(!ss::has_control_chars("\xc2\xa0non-breaking \xc2\xa9", allow));  // U+00A0, U+00A9: text
    CHECK(ss::has_control_chars(std::string_view("nul\0x", 5), allow));
    for (const char* bad : {"esc\x1b[31m", "del\x7f", "nel\xc2\x85",
                            "csi\xc2\x9b"
                            "1m",
                            "pad\xc2\x80"}) {
      CAPTURE(bad);
      CHECK(ss::has_control_chars(bad, allow));
    }
    CHECK(ss::has_control_chars("a\nb\tc", allow) == !allow);
  }
  CHECK(!ss::has_control_chars("ends with a lead \xc2", true));  // not valid UTF-8; not C1 either
}

TEST_CASE("utf8_prefix cuts before a character, never through it") {
  CHECK(ss::utf8_prefix("abc", 5) == "abc");
  CHECK(ss::utf8_prefix("abc", 2) == "ab");
  CHECK(ss::utf8_prefix("a\xe2\x82\xac", 4) == "a\xe2\x82\xac");
  CHECK(ss::utf8_prefix("a\xe2\x82\xac", 3) == "a");
  CHECK(ss::utf8_prefix("a\xe2\x82\xac", 2) == "a");
  CHECK(ss::utf8_prefix("\xf0\x9f\x8d\xb0x", 3).empty());
  CHECK(ss::utf8_prefix("\xf0\x9f\x8d\xb0x", 4) == "\xf0\x9f\x8d\xb0");
}
