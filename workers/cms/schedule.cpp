#include "workers/cms/schedule.h"

#include "shared/json_util.h"
#include "shared/rfc3339.h"

#include <algorithm>
#include <set>
#include <vector>

namespace ss::cms {

namespace {

constexpr std::int64_t kDay = 86400;
// nextChange is looked for a week ahead first (the usual answer), then up to kMaxScanDays.
constexpr std::int64_t kFirstScanDays = 8;

std::int64_t floor_div(std::int64_t a, std::int64_t b) { return a >= 0 ? a / b : (a - b + 1) / b; }

// The date override deciding a local day: the most recently created one covering it.
const Override* date_override(const Content& c, std::int64_t day) {
  const Override* found = nullptr;
  for (const Override& o : c.overrides) {
    if (o.closed_now || day < o.from_day || day > o.to_day) continue;
    if (found == nullptr || o.created_at > found->created_at ||
        (o.created_at == found->created_at && o.id > found->id)) {
      found = &o;
    }
  }
  return found;
}

const DayRanges kNoRanges;

const DayRanges& ranges_of(const Content& c, std::int64_t day, const Override* o) {
  if (o != nullptr) return o->closed || !o->hours ? kNoRanges : *o->hours;
  return c.hours.weekly[static_cast<std::size_t>(weekday_from_days(day))];
}

// The wall-clock minutes at which the answer can flip on local day `day`: its start, and where a
// range of that day (as its override or the weekly hours decide) or of the day before opens or
// closes. Only the day's own ranges count, so a hundred overrides dated elsewhere add nothing.
void flip_minutes(const Content& c, std::int64_t day, std::set<int>& out) {
  out = {0};
  for (std::int64_t d : {day - 1, day}) {
    for (const TimeRange& r : ranges_of(c, d, date_override(c, d))) {
      out.insert(r.open);
      out.insert(r.close % (24 * 60));
    }
  }
}

std::size_t evaluations = 0;

// The longest fall-back in the zone data (Antarctica/Troll's, 2 hours), with a margin.
constexpr std::int64_t kMaxFoldSeconds = 3 * 3600;

// The wall clock that decides at `t`, in local seconds: t's own, except on the second pass of a
// fall-back (the clock went back and shows times it has shown already), where it is the wall clock
// just before the clock went back. Every range boundary in the repeated times happened on their
// first pass, so nothing flips on the second: a shop that closed at 01:30 does not open again
// when the clock shows 01:00 a second time, and one that opened at 01:30 does not close.
std::int64_t wall_clock(const Zone& zone, std::int64_t t) {
  const std::int64_t offset = zone.offset_at(t);
  if (zone.offset_at(t - kMaxFoldSeconds) <= offset) return t + offset;  // no fall-back just now
  const std::vector<std::int64_t> changes = zone.transitions(t - kMaxFoldSeconds + 1, t);
  if (changes.empty()) return t + offset;
  const std::int64_t back = changes.back();
  const std::int64_t before = zone.offset_at(back - 1);
  const std::int64_t after = zone.offset_at(back);
  return before > after && t < back + (before - after) ? back - 1 + before : t + offset;
}

}  // namespace

std::size_t state_evaluations() { return evaluations; }

OpenState state_at(const Content& c, const Zone& zone, std::int64_t t) {
  ++evaluations;
  // Of the emergency closures in force, the one that lasts longest is named (one without an end
  // first): its `until` is when the shop can open again, as nextChange says.
  const Override* emergency = nullptr;
  for (const Override& o : c.overrides) {
    if (!o.closed_now || o.starts_at > t || (o.until && t >= *o.until)) continue;
    if (emergency == nullptr || (emergency->until && (!o.until || *o.until > *emergency->until))) {
      emergency = &o;
    }
  }
  if (emergency != nullptr) return {false, emergency};
  std::int64_t local = wall_clock(zone, t);
  std::int64_t day = floor_div(local, kDay);
  int minute = static_cast<int>((local - day * kDay) / 60);
  const Override* today = date_override(c, day);
  if (today != nullptr && today->closed) return {false, today};
  bool open = false;
  for (const TimeRange& r : ranges_of(c, day, today)) {
    open = open || (r.past_midnight() ? minute >= r.open : minute >= r.open && minute < r.close);
  }
  if (open) return {true, today};
  // Yesterday's range running past midnight still holds (today's own override, special hours, does
  // not end last night's session). A day with its own override answers with it; otherwise, when
  // that range is an override's special hours, that override decides (reason "override"), not the
  // weekly hours.
  const Override* yesterday = date_override(c, day - 1);
  for (const TimeRange& r : ranges_of(c, day - 1, yesterday)) {
    if (r.past_midnight() && minute < r.close) return {true, today != nullptr ? today : yesterday};
  }
  return {false, today};
}

StatusAnswer compute_status(const Content& c, const Zone& zone, std::int64_t t) {
  StatusAnswer answer;
  answer.state = state_at(c, zone, t);
  // The answer can only flip at a wall-clock minute where some range (or a day) starts or ends, at
  // a zone transition (the wall clock jumps), or where an emergency closure starts or ends. The
  // candidates are made day by day from that day's own ranges (docs/cms.md "Worst cases").
  std::set<int> minutes;
  std::int64_t scanned_to = t;
  for (std::int64_t days : {kFirstScanDays, kMaxScanDays}) {
    std::int64_t end = t + days * kDay;
    std::vector<std::int64_t> candidates = zone.transitions(scanned_to, end);
    std::set<std::int64_t> offsets{zone.offset_at(scanned_to), zone.offset_at(end)};
    for (std::int64_t tr : candidates) {
      offsets.insert(zone.offset_at(tr - 1));
      offsets.insert(zone.offset_at(tr));
    }
    for (const Override& o : c.overrides) {
      if (!o.closed_now) continue;
      candidates.push_back(o.starts_at);
      if (o.until) candidates.push_back(*o.until);
    }
    std::int64_t first_day = floor_div(zone.local_seconds(scanned_to), kDay) - 1;
    std::int64_t last_day = floor_div(zone.local_seconds(end), kDay) + 1;
    for (std::int64_t day = first_day; day <= last_day; ++day) {
      flip_minutes(c, day, minutes);
      for (int m : minutes) {
        std::int64_t local = day * kDay + m * 60;
        for (std::int64_t off : offsets) {
          if (zone.offset_at(local - off) == off) candidates.push_back(local - off);
        }
      }
    }
    std::sort(candidates.begin(), candidates.end());
    for (std::int64_t when : candidates) {
      if (when <= scanned_to || when > end) continue;
      if (state_at(c, zone, when).open != answer.state.open) {
        answer.next_change = when;
        return answer;
      }
    }
    scanned_to = end;
  }
  return answer;
}

json status_json(const StatusAnswer& answer) {
  return json_object(
      {{"open", answer.state.open},
       {"reason", answer.state.reason()},
       {"override", answer.state.override ? override_json(*answer.state.override) : json()},
       {"nextChange",
        answer.next_change ? json(format_rfc3339(*answer.next_change * 1000)) : json()}});
}

}  // namespace ss::cms
