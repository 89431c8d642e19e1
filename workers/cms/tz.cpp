#include "workers/cms/tz.h"

#include "shared/rfc3339.h"
#include "workers/cms/tzdata.h"

#include <algorithm>
#include <cstring>

namespace ss::cms {

namespace {

constexpr std::int64_t kSecondsPerDay = 86400;
// Offsets anywhere on Earth stay within ±26 hours, so a wall time has its instants within that.
constexpr std::int64_t kMaxOffsetSeconds = 26 * 3600;
// A TZ string's UTC offsets are at most 24 hours (POSIX); a rule's time of day may run from -167
// to 167 hours (RFC 8536 §3.3.1), so a year's start or end lands at most 8 days outside that year.
constexpr std::int64_t kMaxOffsetHours = 24;
constexpr std::int64_t kMaxRuleTimeHours = 167;

class TzReader {
 public:
  explicit TzReader(std::string_view s) : s_(s) {}
  bool done() const { return i_ >= s_.size(); }
  char peek() const { return done() ? '\0' : s_[i_]; }
  bool take(char c) {
    if (peek() != c) return false;
    ++i_;
    return true;
  }
  bool name() {
    if (take('<')) {
      std::size_t end = s_.find('>', i_);
      if (end == std::string_view::npos) return false;
      i_ = end + 1;
      return true;
    }
    std::size_t start = i_;
    while (!done() && ((peek() >= 'A' && peek() <= 'Z') || (peek() >= 'a' && peek() <= 'z'))) ++i_;
    return i_ - start >= 3;
  }
  std::optional<std::int64_t> number() {
    std::size_t start = i_;
    std::int64_t n = 0;
    while (!done() && peek() >= '0' && peek() <= '9' && i_ - start < 4)
      n = n * 10 + (s_[i_++] - '0');
    if (i_ == start) return std::nullopt;
    return n;
  }
  // [+-]hh[:mm[:ss]], hh at most max_hours
  std::optional<std::int64_t> time(std::int64_t max_hours) {
    std::int64_t sign = 1;
    if (take('-')) {
      sign = -1;
    } else {
      take('+');
    }
    auto h = number();
    if (!h || *h > max_hours) return std::nullopt;
    std::int64_t total = *h * 3600;
    if (take(':')) {
      auto m = number();
      if (!m || *m > 59) return std::nullopt;
      total += *m * 60;
      if (take(':')) {
        auto s = number();
        if (!s || *s > 59) return std::nullopt;
        total += *s;
      }
    }
    return sign * total;
  }
  std::optional<PosixRule::Date> date() {
    PosixRule::Date d;
    if (take('M')) {
      auto m = number();
      if (!m || !take('.')) return std::nullopt;
      auto w = number();
      if (!w || !take('.')) return std::nullopt;
      auto wd = number();
      if (!wd || *m < 1 || *m > 12 || *w < 1 || *w > 5 || *wd > 6) return std::nullopt;
      d.kind = 'M';
      d.month = static_cast<int>(*m);
      d.week = static_cast<int>(*w);
      d.weekday = static_cast<int>(*wd);
    } else {
      d.kind = take('J') ? 'J' : 'n';
      auto n = number();
      if (!n || *n > 365 || (d.kind == 'J' && *n < 1)) return std::nullopt;
      d.day = static_cast<int>(*n);
    }
    if (take('/')) {
      auto t = time(kMaxRuleTimeHours);
      if (!t) return std::nullopt;
      d.time = *t;
    }
    return d;
  }

 private:
  std::string_view s_;
  std::size_t i_ = 0;
};

bool is_leap(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

// Seconds of local midnight (as if UTC) of the rule's day in `year`.
std::int64_t rule_day(const PosixRule::Date& d, int year) {
  std::int64_t jan1 = days_from_civil(year, 1, 1);
  if (d.kind == 'J') {
    std::int64_t n = d.day - 1;
    if (is_leap(year) && d.day >= 60) ++n;
    return (jan1 + n) * kSecondsPerDay;
  }
  if (d.kind == 'n') return (jan1 + d.day) * kSecondsPerDay;
  auto month = static_cast<unsigned>(d.month);
  std::int64_t first = days_from_civil(year, month, 1);
  std::int64_t next =
      month == 12 ? days_from_civil(year + 1, 1, 1) : days_from_civil(year, month + 1, 1);
  std::int64_t day = first + (d.weekday - weekday_from_days(first) + 7) % 7 + (d.week - 1) * 7;
  while (day >= next) day -= 7;  // week 5 means "the last"
  return day * kSecondsPerDay;
}

int utc_year(std::int64_t utc_seconds) {
  std::int64_t days = utc_seconds >= 0 ? utc_seconds / kSecondsPerDay
                                       : (utc_seconds - kSecondsPerDay + 1) / kSecondsPerDay;
  return civil_from_days(days).year;
}

std::string_view name_at(std::size_t i) {
  return std::string_view(tzdata::kNames + tzdata::kNameStart[i]);
}

}  // namespace

std::optional<PosixRule> PosixRule::parse(std::string_view tz) {
  TzReader r(tz);
  PosixRule rule;
  if (!r.name()) return std::nullopt;
  auto std_west = r.time(kMaxOffsetHours);
  if (!std_west) return std::nullopt;
  rule.std_offset = -*std_west;
  if (r.done()) return rule;
  if (!r.name()) return std::nullopt;
  rule.dst_offset = rule.std_offset + 3600;
  if (r.peek() != ',') {
    auto dst_west = r.time(kMaxOffsetHours);
    if (!dst_west) return std::nullopt;
    rule.dst_offset = -*dst_west;
  }
  if (!r.take(',')) return std::nullopt;
  auto start = r.date();
  if (!start || !r.take(',')) return std::nullopt;
  auto end = r.date();
  if (!end || !r.done()) return std::nullopt;
  rule.start = *start;
  rule.end = *end;
  return rule;
}

// The last start (→ DST) or end (→ standard) instant of the years around t that is not after t
// decides; ties put DST last, so "J365/25"-style all-year DST holds. scripts/gen-tzdata.mjs prunes
// transitions with the same algorithm. Two years back: an end of year y-2 can land in y-1 after
// y-1's own start ("0/0,J365/25" with a DST 3 hours off) and still rule early in year y.
std::int64_t PosixRule::offset_at(std::int64_t t) const {
  if (!dst_offset) return std_offset;
  struct Event {
    std::int64_t at;
    bool dst;
  };
  int year = utc_year(t);
  Event events[8];
  int n = 0;
  for (int y = year - 2; y <= year + 1; ++y) {
    events[n++] = {rule_day(end, y) + end.time - *dst_offset, false};
    events[n++] = {rule_day(start, y) + start.time - std_offset, true};
  }
  std::sort(events, events + n, [](const Event& a, const Event& b) {
    return a.at != b.at ? a.at < b.at : (!a.dst && b.dst);
  });
  bool dst = !events[0].dst;
  for (const Event& e : events) {
    if (e.at <= t) dst = e.dst;
  }
  return dst ? *dst_offset : std_offset;
}

void PosixRule::transitions(std::int64_t from, std::int64_t to,
                            std::vector<std::int64_t>& out) const {
  if (!dst_offset) return;
  for (int y = utc_year(from) - 1; y <= utc_year(to) + 1; ++y) {
    for (std::int64_t t : {rule_day(start, y) + start.time - std_offset,
                           rule_day(end, y) + end.time - *dst_offset}) {
      if (t >= from && t <= to && offset_at(t) != offset_at(t - 1)) out.push_back(t);
    }
  }
}

const char* Zone::data_version() { return tzdata::kVersion; }

std::optional<Zone> Zone::find(std::string_view name) {
  std::size_t lo = 0;
  std::size_t hi = tzdata::kZoneCount;
  while (lo < hi) {
    std::size_t mid = (lo + hi) / 2;
    if (name_at(mid) < name) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  if (lo == tzdata::kZoneCount || name_at(lo) != name) return std::nullopt;
  Zone zone;
  zone.name_ = std::string(name);
  zone.set_ = tzdata::kNameRuleSet[lo];
  const char* footer = tzdata::kFooters[tzdata::kRuleSets[zone.set_].footer];
  if (footer[0] != '\0') {
    zone.rule_ = PosixRule::parse(footer);
    if (!zone.rule_) return std::nullopt;  // the generator checked every footer; never happens
  }
  return zone;
}

std::int64_t Zone::offset_at(std::int64_t t) const {
  const tzdata::RuleSet& set = tzdata::kRuleSets[set_];
  const std::int64_t* times = tzdata::kTransitionTimes + set.first_transition;
  const std::int16_t* offsets = tzdata::kTransitionOffsets + set.first_transition;
  std::size_t n = set.transition_count;
  // The explicit transitions rule until the last of them; from there on, the POSIX rule.
  if (n > 0 && t < times[n - 1]) {
    std::size_t after = static_cast<std::size_t>(std::upper_bound(times, times + n, t) - times);
    return 60 *
           static_cast<std::int64_t>(after == 0 ? set.initial_offset_minutes : offsets[after - 1]);
  }
  if (rule_) return rule_->offset_at(t);
  return 60 * static_cast<std::int64_t>(n == 0 ? set.initial_offset_minutes : offsets[n - 1]);
}

std::vector<std::int64_t> Zone::transitions(std::int64_t from, std::int64_t to) const {
  std::vector<std::int64_t> out;
  const tzdata::RuleSet& set = tzdata::kRuleSets[set_];
  const std::int64_t* times = tzdata::kTransitionTimes + set.first_transition;
  std::size_t n = set.transition_count;
  for (std::size_t i = 0; i < n; ++i) {
    if (times[i] >= from && times[i] <= to && offset_at(times[i]) != offset_at(times[i] - 1)) {
      out.push_back(times[i]);
    }
  }
  if (rule_) {
    std::int64_t rule_from = n > 0 ? std::max<std::int64_t>(from, times[n - 1] + 1) : from;
    if (rule_from <= to) rule_->transitions(rule_from, to, out);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<std::int64_t> Zone::instants_of_local(std::int64_t local) const {
  std::vector<std::int64_t> offsets;
  for (std::int64_t t : transitions(local - kMaxOffsetSeconds, local + kMaxOffsetSeconds)) {
    offsets.push_back(offset_at(t - 1));
    offsets.push_back(offset_at(t));
  }
  offsets.push_back(offset_at(local));
  std::sort(offsets.begin(), offsets.end());
  offsets.erase(std::unique(offsets.begin(), offsets.end()), offsets.end());
  std::vector<std::int64_t> out;
  for (std::int64_t off : offsets) {
    if (offset_at(local - off) == off) out.push_back(local - off);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace ss::cms
