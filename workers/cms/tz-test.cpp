// Zone data and rules: offsets around the DST changes of zones with and without DST, against
// instants worked out from the published rules. (The all-zones comparison with an independent
// implementation is tests/integration/cms-tz.test.mjs.)
#include "workers/cms/tz.h"

#include "shared/rfc3339.h"
#include "tests/native/test_support.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <vector>

using ss::cms::PosixRule;
using ss::cms::Zone;
using ss::test::at_seconds;

namespace {

std::int64_t offset(const char* zone, const char* when) {
  auto z = Zone::find(zone);
  REQUIRE(z.has_value());
  return z->offset_at(at_seconds(when));
}

}  // namespace

TEST_CASE("tz: unknown zones are refused, links are known") {
  CHECK_FALSE(Zone::find("Mars/Olympus").has_value());
  CHECK_FALSE(Zone::find("").has_value());
  CHECK_FALSE(Zone::find("america/new_york").has_value());
  CHECK(Zone::find("America/New_York").has_value());
  CHECK(Zone::find("US/Eastern").has_value());
  CHECK(Zone::find("UTC").has_value());
  CHECK(Zone::find("Etc/GMT+5").has_value());
  CHECK(std::string(Zone::data_version()).size() >= 5);
}

TEST_CASE("tz: America/New_York springs forward at 07:00Z and falls back at 06:00Z (2026)") {
  CHECK(offset("America/New_York", "2026-03-08T06:59:59Z") == -5 * 3600);
  CHECK(offset("America/New_York", "2026-03-08T07:00:00Z") == -4 * 3600);
  CHECK(offset("America/New_York", "2026-11-01T05:59:59Z") == -4 * 3600);
  CHECK(offset("America/New_York", "2026-11-01T06:00:00Z") == -5 * 3600);
  CHECK(offset("America/New_York", "2037-07-01T12:00:00Z") == -4 * 3600);
  CHECK(offset("America/New_York", "2020-01-01T00:00:00Z") == -5 * 3600);
}

// These zones list their changes (tied to Ramadan) to 2086-2087 rather than follow a rule: the
// data holds every one (until 2026-12-06 it stopped at 2038 and read the zone's rule after its last
// transition before that, an hour wrong for weeks).
TEST_CASE("tz: zones that list their future keep every listed change through 2099") {
  // Gaza's summer time ended on Friday 2037-10-09 at 23:00Z (its rule would say the 22nd).
  CHECK(offset("Asia/Gaza", "2037-10-09T22:59:59Z") == 3 * 3600);
  CHECK(offset("Asia/Gaza", "2037-10-12T06:30:00Z") == 2 * 3600);
  CHECK(offset("Asia/Gaza", "2038-03-27T00:00:00Z") == 3 * 3600);
  CHECK(offset("Asia/Gaza", "2038-09-25T00:00:00Z") == 2 * 3600);
  // 2040: summer time paused for Ramadan and resumed for a week.
  CHECK(offset("Asia/Gaza", "2040-09-15T00:00:00Z") == 2 * 3600);
  CHECK(offset("Asia/Gaza", "2040-10-22T00:00:00Z") == 3 * 3600);
  CHECK(offset("Asia/Gaza", "2040-10-27T00:00:00Z") == 2 * 3600);
  // Casablanca is at +01 but at +00 during Ramadan.
  CHECK(offset("Africa/Casablanca", "2050-05-15T01:59:59Z") == 3600);
  CHECK(offset("Africa/Casablanca", "2050-05-15T02:00:00Z") == 0);
  CHECK(offset("Africa/Casablanca", "2050-06-26T02:00:00Z") == 3600);
  CHECK(offset("Africa/Casablanca", "2087-04-15T00:00:00Z") == 0);
  CHECK(offset("Africa/Casablanca", "2099-12-31T00:00:00Z") == 3600);
  CHECK(offset("America/New_York", "2099-07-01T12:00:00Z") == -4 * 3600);
}

TEST_CASE("tz: Europe/London changes at 01:00Z on the last Sundays of March and October") {
  CHECK(offset("Europe/London", "2026-03-29T00:59:59Z") == 0);
  CHECK(offset("Europe/London", "2026-03-29T01:00:00Z") == 3600);
  CHECK(offset("Europe/London", "2026-10-25T00:59:59Z") == 3600);
  CHECK(offset("Europe/London", "2026-10-25T01:00:00Z") == 0);
}

TEST_CASE("tz: Australia/Lord_Howe has a 30-minute DST") {
  // Starts on the first Sunday of October at 02:00 local standard time (+10:30).
  CHECK(offset("Australia/Lord_Howe", "2026-10-03T15:29:59Z") == 10 * 3600 + 1800);
  CHECK(offset("Australia/Lord_Howe", "2026-10-03T15:30:00Z") == 11 * 3600);
  // Ends on the first Sunday of April at 02:00 local daylight time (+11:00).
  CHECK(offset("Australia/Lord_Howe", "2026-04-04T14:59:59Z") == 11 * 3600);
  CHECK(offset("Australia/Lord_Howe", "2026-04-04T15:00:00Z") == 10 * 3600 + 1800);
}

TEST_CASE("tz: zones without DST keep one offset") {
  for (const char* when :
       {"2020-01-01T00:00:00Z", "2026-03-08T07:00:00Z", "2037-12-31T23:59:59Z"}) {
    CHECK(offset("Asia/Tokyo", when) == 9 * 3600);
    CHECK(offset("Asia/Kolkata", when) == 5 * 3600 + 1800);
    CHECK(offset("Asia/Kathmandu", when) == 5 * 3600 + 2700);
  }
  auto tokyo = Zone::find("Asia/Tokyo");
  CHECK(tokyo->transitions(at_seconds("2020-01-01T00:00:00Z"), at_seconds("2037-12-31T00:00:00Z"))
            .empty());
}

TEST_CASE("tz: a skipped wall time has no instant, a repeated one has two") {
  auto ny = Zone::find("America/New_York");
  // 2026-03-08 02:30 local does not exist; 2026-11-01 01:30 local happens twice.
  std::int64_t gap = ss::days_from_civil(2026, 3, 8) * 86400 + 2 * 3600 + 1800;
  CHECK(ny->instants_of_local(gap).empty());
  std::int64_t overlap = ss::days_from_civil(2026, 11, 1) * 86400 + 3600 + 1800;
  auto twice = ny->instants_of_local(overlap);
  REQUIRE(twice.size() == 2);
  CHECK(twice[0] == at_seconds("2026-11-01T05:30:00Z"));
  CHECK(twice[1] == at_seconds("2026-11-01T06:30:00Z"));
}

TEST_CASE("tz: POSIX TZ rules parse, including angle-bracket names and odd times") {
  auto ny = PosixRule::parse("EST5EDT,M3.2.0,M11.1.0");
  REQUIRE(ny.has_value());
  CHECK(ny->std_offset == -5 * 3600);
  CHECK(ny->dst_offset == -4 * 3600);
  auto godthab = PosixRule::parse("<-02>2<-01>,M3.5.0/-1,M10.5.0/0");
  REQUIRE(godthab.has_value());
  CHECK(godthab->start.time == -3600);
  auto all_year = PosixRule::parse("<-03>3<-02>,0/0,J365/25");
  REQUIRE(all_year.has_value());
  CHECK(all_year->offset_at(at_seconds("2026-06-01T00:00:00Z")) == -2 * 3600);
  CHECK(all_year->offset_at(at_seconds("2026-12-31T12:00:00Z")) == -2 * 3600);
  CHECK(all_year->offset_at(at_seconds("2026-01-01T12:00:00Z")) == -2 * 3600);
  CHECK_FALSE(PosixRule::parse("EST5EDT,M13.2.0,M11.1.0").has_value());
  CHECK_FALSE(PosixRule::parse("<+03").has_value());
}

// Found by tests/fuzz/zone_fuzz.cpp: with a DST three hours off standard, "J365/25" ends year y's
// DST at 09:00Z on Jan 1 of y+1, after y+1's own start (05:00Z). Early in y+2 that end still rules,
// but offset_at only looked one year back and answered DST from 00:00Z, a change transitions()
// never listed.
TEST_CASE("tz: a POSIX rule's offset follows its transitions across a year boundary") {
  auto rule = PosixRule::parse("EST5EDT8,0/0,J365/25");
  REQUIRE(rule.has_value());
  CHECK(rule->offset_at(at_seconds("2020-12-31T23:59:59Z")) == -5 * 3600);
  CHECK(rule->offset_at(at_seconds("2021-01-01T00:00:00Z")) == -5 * 3600);  // was -8 h
  CHECK(rule->offset_at(at_seconds("2021-01-01T05:00:00Z")) == -8 * 3600);  // y+1's start
  CHECK(rule->offset_at(at_seconds("2021-01-01T09:00:00Z")) == -5 * 3600);  // y's end
  std::vector<std::int64_t> changes;
  rule->transitions(at_seconds("2020-12-01T00:00:00Z"), at_seconds("2021-02-01T00:00:00Z"),
                    changes);
  std::sort(changes.begin(), changes.end());  // listed by year, not by instant
  CHECK(changes == std::vector<std::int64_t>{at_seconds("2021-01-01T05:00:00Z"),
                                             at_seconds("2021-01-01T09:00:00Z")});
}

// Offsets are at most 24 hours (POSIX) and a rule's time at most 167 hours (RFC 8536): beyond that
// a year's change could land two years away, outside the years offset_at looks at.
TEST_CASE("tz: POSIX rules with out-of-range offsets or times are refused") {
  CHECK(PosixRule::parse("<+14>-14").has_value());
  CHECK(PosixRule::parse("EST5EDT,M3.2.0/167,M11.1.0/-167").has_value());
  CHECK_FALSE(PosixRule::parse("<+25>-25").has_value());
  CHECK_FALSE(PosixRule::parse("EST5EDT,M3.2.0/168,M11.1.0").has_value());
  CHECK_FALSE(PosixRule::parse("EST5EDT,J1/9999,J2").has_value());
  CHECK_FALSE(PosixRule::parse("EST5:60EDT,M3.2.0,M11.1.0").has_value());
  CHECK_FALSE(PosixRule::parse("EST5EDT,M3.2.0/2:00:60,M11.1.0").has_value());
}
