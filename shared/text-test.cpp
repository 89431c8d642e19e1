#include "shared/text.h"

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

}  // namespace ss
