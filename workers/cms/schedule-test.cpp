// Open/closed and nextChange on the tenant's wall clock, across DST changes, past midnight, date
// overrides and emergency closures.
#include "workers/cms/schedule.h"

#include "shared/json_util.h"
#include "shared/rfc3339.h"
#include "tests/native/test_support.h"

#include <doctest/doctest.h>

#include <cstdio>

using namespace ss::cms;
using ss::json;
using ss::test::at_seconds;

namespace {

Content content_with(const char* zone, json weekly, json overrides = json::array()) {
  json doc{{"tenantId", "t"},
           {"version", 1},
           {"hours", {{"timezone", zone}, {"weekly", weekly}}},
           {"overrides", overrides},
           {"announcements", json::array()}};
  auto c = content_from_json(doc);
  REQUIRE(c.ok());
  return std::move(c).value();
}

json status(const Content& c, const char* when) {
  return status_json(compute_status(c, *Zone::find(c.hours.timezone), at_seconds(when)));
}

}  // namespace

TEST_CASE("schedule: a shop opening at 02:30 on the spring-forward day opens at the jump") {
  // 2026-03-08 is a Sunday; 02:00 EST jumps to 03:00 EDT at 07:00Z.
  Content c =
      content_with("America/New_York", {{"sun", {{{"open", "02:30"}, {"close", "05:00"}}}}});
  json before = status(c, "2026-03-08T06:59:00Z");
  CHECK(before["open"] == false);
  CHECK(before["reason"] == "closed");
  CHECK(before["nextChange"] == "2026-03-08T07:00:00Z");
  json after = status(c, "2026-03-08T07:00:00Z");
  CHECK(after["open"] == true);
  CHECK(after["reason"] == "regular_hours");
  CHECK(after["override"].is_null());
  CHECK(after["nextChange"] == "2026-03-08T09:00:00Z");  // 05:00 EDT
}

TEST_CASE("schedule: a shift spanning the fall-back hour lasts an hour longer") {
  // Saturday 2026-10-31 22:00 EDT (02:00Z) to Sunday 06:00 EST (11:00Z): nine hours.
  Content c =
      content_with("America/New_York", {{"sat", {{{"open", "22:00"}, {"close", "06:00"}}}}});
  CHECK(status(c, "2026-11-01T01:59:00Z")["open"] == false);
  CHECK(status(c, "2026-11-01T01:59:00Z")["nextChange"] == "2026-11-01T02:00:00Z");
  for (const char* when : {"2026-11-01T02:00:00Z", "2026-11-01T05:30:00Z", "2026-11-01T06:30:00Z",
                           "2026-11-01T10:59:00Z"}) {
    CAPTURE(when);
    json s = status(c, when);
    CHECK(s["open"] == true);
    CHECK(s["nextChange"] == "2026-11-01T11:00:00Z");
  }
  CHECK(status(c, "2026-11-01T11:00:00Z")["open"] == false);
  CHECK(status(c, "2026-11-01T11:00:00Z")["nextChange"] ==
        "2026-11-08T03:00:00Z");  // next Sat 22:00 EST
}

TEST_CASE("schedule: nothing flips on the second pass of the repeated fall-back hour") {
  // New York goes back from 02:00 EDT to 01:00 EST at 06:00Z on Sunday 2026-11-01: 01:00–02:00
  // local comes twice (05:00–06:00Z EDT, 06:00–07:00Z EST). A shop that closed at 01:30 EDT does
  // not open again at 01:00 EST, and one that opened at 01:30 EDT does not close then.
  Content closes =
      content_with("America/New_York", {{"sat", {{{"open", "20:00"}, {"close", "01:30"}}}}});
  CHECK(status(closes, "2026-11-01T05:00:00Z")["open"] == true);
  CHECK(status(closes, "2026-11-01T05:00:00Z")["nextChange"] == "2026-11-01T05:30:00Z");
  for (const char* when : {"2026-11-01T05:30:00Z", "2026-11-01T06:00:00Z", "2026-11-01T06:10:00Z",
                           "2026-11-01T06:59:59Z", "2026-11-01T07:00:00Z"}) {
    CAPTURE(when);
    CHECK(status(closes, when)["open"] == false);
    CHECK(status(closes, when)["nextChange"] == "2026-11-08T01:00:00Z");  // next Sat 20:00 EST
  }
  Content opens =
      content_with("America/New_York", {{"sun", {{{"open", "01:30"}, {"close", "03:30"}}}}});
  CHECK(status(opens, "2026-11-01T05:00:00Z")["nextChange"] == "2026-11-01T05:30:00Z");
  for (const char* when : {"2026-11-01T05:30:00Z", "2026-11-01T06:00:00Z", "2026-11-01T06:10:00Z",
                           "2026-11-01T06:45:00Z", "2026-11-01T08:00:00Z"}) {
    CAPTURE(when);
    CHECK(status(opens, when)["open"] == true);
    CHECK(status(opens, when)["reason"] == "regular_hours");
    CHECK(status(opens, when)["nextChange"] == "2026-11-01T08:30:00Z");  // 03:30 EST
  }
  // A closure ended by an emergency's end inside the second pass still ends there.
  json emergency = json::array({{{"id", "01K00000000000000000000001"},
                                 {"closedNow", true},
                                 {"from", "2026-11-01T05:20:00Z"},
                                 {"until", "2026-11-01T06:10:00Z"}}});  // until 01:10 EST
  Content always = content_with("America/New_York",
                                {{"sun", {{{"open", "00:00"}, {"close", "24:00"}}}}}, emergency);
  CHECK(status(always, "2026-11-01T06:05:00Z")["open"] == false);
  CHECK(status(always, "2026-11-01T06:05:00Z")["nextChange"] == "2026-11-01T06:10:00Z");
  CHECK(status(always, "2026-11-01T06:10:00Z")["open"] == true);
}

TEST_CASE("schedule: Europe/London and Australia/Lord_Howe changes move the opening instants") {
  Content london =
      content_with("Europe/London", {{"sun", {{{"open", "09:00"}, {"close", "17:00"}}}}});
  CHECK(status(london, "2026-03-29T08:30:00Z")["open"] == true);   // 09:30 BST
  CHECK(status(london, "2026-03-22T08:30:00Z")["open"] == false);  // 08:30 GMT
  CHECK(status(london, "2026-03-22T08:30:00Z")["nextChange"] == "2026-03-22T09:00:00Z");
  CHECK(status(london, "2026-03-28T12:00:00Z")["nextChange"] == "2026-03-29T08:00:00Z");

  // Lord Howe jumps from 02:00 (+10:30) to 02:30 (+11) at 15:30Z on Saturday 2026-10-03.
  Content howe =
      content_with("Australia/Lord_Howe", {{"sun", {{{"open", "02:15"}, {"close", "04:00"}}}}});
  json before = status(howe, "2026-10-03T15:00:00Z");  // 01:30 local
  CHECK(before["open"] == false);
  CHECK(before["nextChange"] == "2026-10-03T15:30:00Z");
  CHECK(status(howe, "2026-10-03T15:30:00Z")["nextChange"] == "2026-10-03T17:00:00Z");  // 04:00 +11
}

TEST_CASE("schedule: a zone without DST and a range past midnight") {
  Content c = content_with("Asia/Kolkata", {{"fri", {{{"open", "20:00"}, {"close", "02:00"}}}}});
  // Friday 2026-05-29 20:00 IST = 14:30Z; closes Saturday 02:00 IST = 20:30Z.
  CHECK(status(c, "2026-05-29T14:29:00Z")["nextChange"] == "2026-05-29T14:30:00Z");
  json open = status(c, "2026-05-29T19:00:00Z");  // Saturday 00:30 IST
  CHECK(open["open"] == true);
  CHECK(open["nextChange"] == "2026-05-29T20:30:00Z");
}

TEST_CASE("schedule: date overrides close days or give them special hours") {
  json weekly{{"thu", {{{"open", "07:00"}, {"close", "15:00"}}}},
              {"fri", {{{"open", "07:00"}, {"close", "15:00"}}}},
              {"sat", {{{"open", "07:00"}, {"close", "15:00"}}}}};
  json overrides = json::array({{{"id", "A"},
                                 {"from", "2026-12-24"},
                                 {"to", "2026-12-25"},
                                 {"closed", true},
                                 {"message", "Holidays"}},
                                {{"id", "B"},
                                 {"from", "2026-12-26"},
                                 {"hours", {{{"open", "10:00"}, {"close", "12:00"}}}}}});
  Content c = content_with("America/New_York", weekly, overrides);
  json closed = status(c, "2026-12-24T15:00:00Z");  // Thursday 10:00 EST
  CHECK(closed["open"] == false);
  CHECK(closed["reason"] == "override");
  CHECK(closed["override"]["id"] == "A");
  CHECK(closed["override"]["message"] == "Holidays");
  CHECK(closed["nextChange"] == "2026-12-26T15:00:00Z");  // Saturday 10:00 special hours
  json special = status(c, "2026-12-26T16:00:00Z");
  CHECK(special["open"] == true);
  CHECK(special["reason"] == "override");
  CHECK(special["nextChange"] == "2026-12-26T17:00:00Z");
  CHECK(status(c, "2026-12-26T13:00:00Z")["open"] == false);  // 08:00: regular hours replaced
}

TEST_CASE("schedule: an override's special hours past midnight decide the next morning too") {
  // Tuesday 2027-03-16 gets 20:00–01:00 (EDT); Wednesday has no hours of its own.
  json weekly{{"tue", {{{"open", "07:00"}, {"close", "15:00"}}}}};
  json overrides = json::array({{{"id", "L"},
                                 {"from", "2027-03-16"},
                                 {"to", "2027-03-16"},
                                 {"hours", {{{"open", "20:00"}, {"close", "01:00"}}}}}});
  Content c = content_with("America/New_York", weekly, overrides);
  json late = status(c, "2027-03-17T04:30:00Z");  // Wednesday 00:30 EDT
  CHECK(late["open"] == true);
  CHECK(late["reason"] == "override");  // was regular_hours, with override null
  CHECK(late["override"]["id"] == "L");
  CHECK(late["nextChange"] == "2027-03-17T05:00:00Z");
  json after = status(c, "2027-03-17T05:30:00Z");  // Wednesday 01:30: closed, no override
  CHECK(after["open"] == false);
  CHECK(after["reason"] == "closed");
  CHECK(after["override"].is_null());
  // A weekly range past midnight into a day without an override stays regular hours.
  Content weekly_late =
      content_with("America/New_York", {{"tue", {{{"open", "20:00"}, {"close", "01:00"}}}}});
  json spill = status(weekly_late, "2027-03-17T04:30:00Z");
  CHECK(spill["open"] == true);
  CHECK(spill["reason"] == "regular_hours");
  CHECK(spill["override"].is_null());
  // A day with special hours of its own still has last night's session until it closes (Wednesday
  // 10:00–14:00 does not close Tuesday's 20:00–01:00 at midnight); the day's override answers.
  json short_day = json::array({{{"id", "S"},
                                 {"from", "2027-03-17"},
                                 {"to", "2027-03-17"},
                                 {"hours", {{{"open", "10:00"}, {"close", "14:00"}}}}}});
  Content both = content_with("America/New_York",
                              {{"tue", {{{"open", "20:00"}, {"close", "01:00"}}}}}, short_day);
  json night = status(both, "2027-03-17T04:30:00Z");  // Wednesday 00:30
  CHECK(night["open"] == true);
  CHECK(night["reason"] == "override");
  CHECK(night["override"]["id"] == "S");
  CHECK(night["nextChange"] == "2027-03-17T05:00:00Z");
  json morning = status(both, "2027-03-17T12:00:00Z");  // Wednesday 08:00: before its hours
  CHECK(morning["open"] == false);
  CHECK(morning["reason"] == "override");
  CHECK(morning["override"]["id"] == "S");
}

TEST_CASE("schedule: an emergency closure wins until it ends; none open → nextChange null") {
  json weekly{{"mon", {{{"open", "00:00"}, {"close", "24:00"}}}}};
  json overrides = json::array({{{"id", "E"},
                                 {"closedNow", true},
                                 {"from", "2026-06-01T12:00:00Z"},
                                 {"until", "2026-06-01T18:00:00Z"},
                                 {"message", "Power cut"}}});
  Content c = content_with("UTC", weekly, overrides);  // 2026-06-01 is a Monday
  CHECK(status(c, "2026-06-01T11:00:00Z")["open"] == true);
  CHECK(status(c, "2026-06-01T11:00:00Z")["nextChange"] == "2026-06-01T12:00:00Z");
  json during = status(c, "2026-06-01T13:00:00Z");
  CHECK(during["open"] == false);
  CHECK(during["reason"] == "override");
  CHECK(during["override"]["closedNow"] == true);
  CHECK(during["nextChange"] == "2026-06-01T18:00:00Z");

  Content never = content_with("UTC", json::object());
  CHECK(status(never, "2026-06-01T13:00:00Z")["nextChange"].is_null());
}

TEST_CASE("schedule: of two emergency closures, the one lasting longest is named") {
  json weekly{{"mon", {{{"open", "00:00"}, {"close", "24:00"}}}}};
  json bounded{{"id", "A"},
               {"closedNow", true},
               {"from", "2026-06-01T12:00:00Z"},
               {"until", "2026-06-01T18:00:00Z"},
               {"message", "until six"}};
  json later = bounded;
  later["id"] = "B";
  later["until"] = "2026-06-01T20:00:00Z";
  later["message"] = "until eight";
  json open_ended = bounded;
  open_ended["id"] = "C";
  open_ended["until"] = nullptr;
  open_ended["message"] = "no end";
  // In either order, the banner's "closed until" agrees with nextChange.
  for (const json& overrides : {json::array({bounded, later}), json::array({later, bounded})}) {
    Content c = content_with("UTC", weekly, overrides);
    json during = status(c, "2026-06-01T13:00:00Z");
    CHECK(during["override"]["id"] == "B");
    CHECK(during["nextChange"] == "2026-06-01T20:00:00Z");
    CHECK(during["override"]["until"] == during["nextChange"]);
  }
  for (const json& overrides :
       {json::array({bounded, open_ended}), json::array({open_ended, bounded})}) {
    Content c = content_with("UTC", weekly, overrides);
    json during = status(c, "2026-06-01T13:00:00Z");
    CHECK(during["override"]["id"] == "C");
    CHECK(during["override"]["until"].is_null());
    CHECK(during["nextChange"].is_null());
  }
}

TEST_CASE("schedule: overrides' hours count only on their own days (a hundred of them far ahead)") {
  // Open around the clock in six back-to-back ranges a day: the answer never flips by itself.
  json day = json::array();
  for (int h = 0; h < 24; h += 4) {
    char open[6], close[6];
    std::snprintf(open, sizeof open, "%02d:00", h);
    std::snprintf(close, sizeof close, "%02d:00", h + 4);
    day.push_back({{"open", open}, {"close", close}});
  }
  json weekly = json::object();
  for (const char* key : kDayKeys) weekly[key] = day;
  // The cap's worth of overrides in 2035, far past the scan, each with six ranges at odd minutes.
  json overrides = json::array();
  for (int i = 0; i < static_cast<int>(kMaxOverrides) - 2; ++i) {
    json hours = json::array();
    for (int r = 0; r < 6; ++r) {
      char open[6], close[6];
      std::snprintf(open, sizeof open, "%02d:%02d", 2 * r + 1, (i + r) % 60);
      std::snprintf(close, sizeof close, "%02d:%02d", 2 * r + 2, (i * 7 + r) % 60);
      hours.push_back({{"open", open}, {"close", close}});
    }
    char date[11];
    std::snprintf(date, sizeof date, "2035-%02d-%02d", 1 + i / 28, 1 + i % 28);
    overrides.push_back({{"id", "far" + std::to_string(i)}, {"from", date}, {"hours", hours}});
  }
  Content far = content_with("Europe/Paris", weekly, overrides);
  const std::size_t before = state_evaluations();
  json always = status(far, "2026-06-01T10:00:00Z");
  CHECK(always["open"] == true);
  CHECK(always["nextChange"].is_null());
  // The scan's work: ~7 boundaries a day over 408 days, each evaluated once (it was every
  // override's minutes on every day: over a million evaluations).
  CHECK(state_evaluations() - before < 10'000);

  // Two within the scan: special hours on 2026-09-10 (10:07–11:13) and a closed day on 2027-03-01.
  overrides.push_back({{"id", "sep"},
                       {"from", "2026-09-10"},
                       {"hours", {{{"open", "10:07"}, {"close", "11:13"}}}}});
  overrides.push_back({{"id", "mar"}, {"from", "2027-03-01"}, {"closed", true}});
  Content near = content_with("Europe/Paris", weekly, overrides);
  CHECK(status(near, "2026-06-01T10:00:00Z")["nextChange"] ==
        "2026-09-09T22:00:00Z");  // 00:00 CEST
  json special = status(near, "2026-09-10T05:00:00Z");
  CHECK(special["open"] == false);
  CHECK(special["nextChange"] == "2026-09-10T08:07:00Z");
  CHECK(status(near, "2026-09-10T08:07:00Z")["nextChange"] == "2026-09-10T09:13:00Z");
  CHECK(status(near, "2026-09-10T09:13:00Z")["nextChange"] == "2026-09-10T22:00:00Z");
  CHECK(status(near, "2026-09-11T00:00:00Z")["nextChange"] == "2027-02-28T23:00:00Z");  // CET
}

// docs/cms.md "Model": a day's ranges may touch or overlap; the day is open in their union, so
// no nextChange falls where one range ends inside (or at the start of) another.
TEST_CASE("schedule: a day's touching or overlapping ranges are open in their union") {
  // 2026-12-07 is a Monday.
  Content c = content_with("UTC", {{"mon",
                                    {{{"open", "09:00"}, {"close", "12:00"}},
                                     {{"open", "11:00"}, {"close", "13:00"}},
                                     {{"open", "13:00"}, {"close", "15:00"}}}}});
  for (const char* when : {"2026-12-07T09:00:00Z", "2026-12-07T11:59:59Z", "2026-12-07T12:00:00Z",
                           "2026-12-07T13:00:00Z"}) {
    CAPTURE(when);
    json s = status(c, when);
    CHECK(s["open"] == true);
    CHECK(s["nextChange"] == "2026-12-07T15:00:00Z");
  }
  CHECK(status(c, "2026-12-07T15:00:00Z")["open"] == false);
  CHECK(status(c, "2026-12-07T08:59:59Z")["nextChange"] == "2026-12-07T09:00:00Z");
}
