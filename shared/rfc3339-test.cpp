#include "shared/rfc3339.h"

#include <doctest/doctest.h>

namespace ss {
namespace {

constexpr std::int64_t kExample = 1779718991096;  // 2026-05-25T14:23:11.096Z

TEST_CASE("rfc3339: civil day arithmetic") {
  static_assert(days_from_civil(1970, 1, 1) == 0);
  CHECK(days_from_civil(2000, 3, 1) == 11017);
  CHECK(days_from_civil(1969, 12, 31) == -1);
  CHECK(days_from_civil(2024, 2, 29) + 1 == days_from_civil(2024, 3, 1));
  const CivilDate d = civil_from_days(days_from_civil(2026, 5, 25));
  CHECK(d.year == 2026);
  CHECK(d.month == 5u);
  CHECK(d.day == 25u);
  const CivilDate before = civil_from_days(-1);
  CHECK(before.year == 1969);
  CHECK(before.month == 12u);
  CHECK(before.day == 31u);
  CHECK(weekday_from_days(0) == 4);                              // Thursday
  CHECK(weekday_from_days(days_from_civil(2026, 5, 25)) == 1);   // Monday
  CHECK(weekday_from_days(days_from_civil(1969, 12, 28)) == 0);  // Sunday
  CHECK(weekday_from_days(-1) == 3);
  for (std::int64_t day = -800000; day <= 800000; day += 997) {
    const CivilDate c = civil_from_days(day);
    CHECK(days_from_civil(c.year, c.month, c.day) == day);
  }
  CHECK(kMinRfc3339Ms == -62167219200000);
  CHECK(kMaxRfc3339Ms == 253402300799999);
}

TEST_CASE("rfc3339: formatting") {
  CHECK(format_rfc3339(kExample) == "2026-05-25T14:23:11Z");
  CHECK(format_rfc3339_ms(kExample) == "2026-05-25T14:23:11.096Z");
  CHECK(format_rfc3339(0) == "1970-01-01T00:00:00Z");
  CHECK(format_rfc3339_ms(-1) == "1969-12-31T23:59:59.999Z");
  CHECK(format_rfc3339(-1) == "1969-12-31T23:59:59Z");  // floored, not rounded toward 1970
  CHECK(format_rfc3339(951782400000) == "2000-02-29T00:00:00Z");
  // Clamped to what RFC 3339 can write.
  CHECK(format_rfc3339_ms(INT64_MIN) == "0000-01-01T00:00:00.000Z");
  CHECK(format_rfc3339_ms(INT64_MAX) == "9999-12-31T23:59:59.999Z");
  // The platform's stamps: the second, fixed width; shown as the contract writes times.
  CHECK(format_rfc3339_stamp(kExample) == "2026-05-25T14:23:11.000Z");
  CHECK(format_rfc3339_stamp(-1) == "1969-12-31T23:59:59.000Z");
  CHECK(format_rfc3339_stamp(INT64_MIN) == "0000-01-01T00:00:00.000Z");
  CHECK(format_rfc3339_stamp(INT64_MAX) == "9999-12-31T23:59:59.000Z");
  CHECK(shown_rfc3339(format_rfc3339_stamp(kExample)) == "2026-05-25T14:23:11Z");
  CHECK(shown_rfc3339("2026-05-25T14:23:11.250Z") == "2026-05-25T14:23:11.250Z");
  CHECK(shown_rfc3339("2026-05-25T14:23:11Z") == "2026-05-25T14:23:11Z");
  CHECK(shown_rfc3339("") == "");
}

TEST_CASE("rfc3339: round trips") {
  const std::int64_t samples[] = {0,
                                  -1,
                                  1,
                                  kExample,
                                  -86'400'000,
                                  951782400000,
                                  kMinRfc3339Ms,
                                  kMaxRfc3339Ms,
                                  -2208988800000 /* 1900-01-01 */};
  for (std::int64_t ms : samples) {
    CHECK(parse_rfc3339(format_rfc3339_ms(ms)) == ms);
    const std::int64_t whole = ms - ((ms % 1000) + 1000) % 1000;
    CHECK(parse_rfc3339(format_rfc3339(ms)) == whole);
  }
}

TEST_CASE("rfc3339: parsing") {
  CHECK(parse_rfc3339("2026-05-25T14:23:11Z") == kExample - 96);
  CHECK(parse_rfc3339("2026-05-25t14:23:11z") == kExample - 96);
  CHECK(parse_rfc3339("2026-05-25T14:23:11.096Z") == kExample);
  CHECK(parse_rfc3339("2026-05-25T14:23:11.0969999Z") == kExample);  // truncated
  CHECK(parse_rfc3339("2026-05-25T14:23:11.9Z") == kExample - 96 + 900);
  CHECK(parse_rfc3339("2026-05-25T16:23:11+02:00") == parse_rfc3339("2026-05-25T14:23:11Z"));
  CHECK(parse_rfc3339("2026-05-25T09:53:11-04:30") == kExample - 96);
  CHECK(parse_rfc3339("2026-05-25T14:23:11-00:00") == kExample - 96);
  CHECK(parse_rfc3339("2026-01-01T00:30:00+01:00") == parse_rfc3339("2025-12-31T23:30:00Z"));
  CHECK(parse_rfc3339("1969-12-31T23:59:59.999Z") == -1);
  CHECK(parse_rfc3339("2024-02-29T12:00:00Z").has_value());
  CHECK(parse_rfc3339("2000-02-29T12:00:00Z").has_value());
}

TEST_CASE("rfc3339: rejects bad input") {
  const char* bad[] = {
      "",
      "garbage",
      "2026-05-25",            // date only
      "2026-05-25T14:23:11",   // missing offset
      "2026-05-25T14:23Z",     // missing seconds
      "2026-02-29T00:00:00Z",  // not a leap year
      "1900-02-29T00:00:00Z",  // century, not a leap year
      "2026-02-30T00:00:00Z",
      "2026-04-31T00:00:00Z",
      "2026-13-01T00:00:00Z",
      "2026-00-01T00:00:00Z",
      "2026-05-00T00:00:00Z",
      "2026-05-25T24:00:00Z",  // hour 24
      "2026-05-25T14:60:00Z",
      "2026-05-25T14:23:60Z",  // leap seconds are not representable
      "2026-05-25 14:23:11Z",
      "2026-05-25T14:23:11.Z",  // empty fraction
      "2026-05-25T14:23:11+0200",
      "2026-05-25T14:23:11+02",
      "2026-05-25T14:23:11+24:00",
      "2026-05-25T14:23:11+02:60",
      "2026-05-25T14:23:11ZZ",
      "2026-05-25T14:23:11Z ",
      " 2026-05-25T14:23:11Z",
      "+2026-05-25T14:23:11Z",
      "-001-05-25T14:23:11Z",
      "2026-5-25T14:23:11Z",
      "2026-05-25T1:23:11Z",
      "2026/05/25T14:23:11Z",
      "2026-05-25T14:23:11.123456789012345678901234567890123456789012345Z",  // over the limit
      "9999-12-31T23:59:19-16:23",  // the offset moves it into the year 10000 (found by the fuzzer)
      "0000-01-01T00:00:00+00:01",  // ... or before the year 0
  };
  for (const char* s : bad) {
    INFO(s);
    CHECK_FALSE(parse_rfc3339(s).has_value());
  }
}

TEST_CASE("rfc3339: the ends of the writable range still parse") {
  CHECK(parse_rfc3339("9999-12-31T23:59:59.999Z") == kMaxRfc3339Ms);
  CHECK(parse_rfc3339("9999-12-31T23:59:59.999+00:01") == kMaxRfc3339Ms - 60'000);
  CHECK(parse_rfc3339("0000-01-01T00:00:00Z") == kMinRfc3339Ms);
  CHECK(parse_rfc3339("0000-01-01T00:00:00-00:01") == kMinRfc3339Ms + 60'000);
}

TEST_CASE("rfc3339: parse_date") {
  CHECK(parse_date("2026-12-24") == days_from_civil(2026, 12, 24) * kMsPerDay);
  CHECK(parse_date("1970-01-01") == 0);
  CHECK(parse_date("1969-12-31") == -kMsPerDay);
  CHECK(parse_date("2024-02-29").has_value());
  CHECK_FALSE(parse_date("2026-02-29").has_value());
  CHECK_FALSE(parse_date("2026-12-32").has_value());
  CHECK_FALSE(parse_date("2026-12-24T00:00:00Z").has_value());
  CHECK_FALSE(parse_date("2026-12-2").has_value());
  CHECK_FALSE(parse_date("20261224").has_value());
  CHECK_FALSE(parse_date("").has_value());
  CHECK(format_rfc3339(*parse_date("2026-12-24")) == "2026-12-24T00:00:00Z");
}

TEST_CASE("shown_rfc3339_second: a stored time as the second it falls in") {
  CHECK(shown_rfc3339_second("2026-12-03T10:04:48.621Z") == "2026-12-03T10:04:48Z");
  CHECK(shown_rfc3339_second("2026-12-03T10:04:48.000Z") == "2026-12-03T10:04:48Z");
  CHECK(shown_rfc3339_second("2026-12-03T10:04:48Z") == "2026-12-03T10:04:48Z");
  CHECK(shown_rfc3339_second("1969-12-31T23:59:59.500Z") == "1969-12-31T23:59:59Z");
  CHECK(shown_rfc3339_second("not a time") == "not a time");
}

}  // namespace
}  // namespace ss
